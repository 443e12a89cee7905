// Goal: `roster watch <topic> [key] -- <handler>` as `consul watch` runs a handler, against a started
// agent: the handler gets the snapshot once, then each change once, as JSON on its stdin, in order, with
// ROSTER_WATCH_INDEX set to the change's index; a failing handler is reported and the watch goes on;
// Ctrl-C ends the watch with 0; a missing handler after `--` is a usage error.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { roster, startRoster, until, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-watchh-');
const { file, read } = cli;

/** The handler's calls: one line each, `<ROSTER_WATCH_INDEX> <the JSON it read>`. */
const calls = (name: string) => read(name).split('\n').filter(Boolean).map((l) => {
  const space = l.indexOf(' ');
  return { envIndex: l.slice(0, space), change: JSON.parse(l.slice(space + 1)) };
});
const valueOf = (entry: { Value: string }) => Buffer.from(entry.Value, 'base64').toString();

describe('a handler command', () => {
  test('the snapshot once, then each change once, as JSON on stdin, in order', async () => {
    expect((await cli.http.put('/v1/kv/wh/a', '1')).text).toBe('true');
    const out = file('calls');
    // Several words after --: run directly (no shell of ours); the handler's own sh records env and stdin.
    const run = startRoster(['watch', 'kv_prefix', 'wh/', '--', 'sh', '-c', `printf '%s %s\\n' "$ROSTER_WATCH_INDEX" "$(cat)" >> ${out}`], { agent: cli.agent.url, timeoutMs: 60_000 });
    try {
      await until('the snapshot call', () => calls('calls').length === 1, 30_000);
      expect((await cli.http.put('/v1/kv/wh/b', '2')).text).toBe('true');
      await until('the upsert call', () => calls('calls').length === 2, 30_000);
      expect((await cli.http.del('/v1/kv/wh/a')).text).toBe('true');
      await until('the delete call', () => calls('calls').length === 3, 30_000);
    } finally {
      run.proc.kill('SIGINT');
    }
    const r = await run.exited;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('');
    const [snapshot, upsert, del] = calls('calls');
    expect(snapshot!.change).toMatchObject({ type: 'snapshot', items: [{ key: 'wh/a', value: { Key: 'wh/a' } }] });
    expect(valueOf(snapshot!.change.items[0].value)).toBe('1');
    expect(upsert!.change).toMatchObject({ type: 'upsert', key: 'wh/b', value: { Key: 'wh/b' } });
    expect(valueOf(upsert!.change.value)).toBe('2');
    expect(del!.change).toMatchObject({ type: 'delete', key: 'wh/a' });
    for (const c of [snapshot!, upsert!, del!]) expect(c.envIndex).toBe(String(c.change.index));
    expect(snapshot!.change.index < upsert!.change.index && upsert!.change.index < del!.change.index).toBe(true);
  }, 90_000);

  test('a handler that fails is reported and the watch goes on; one that cannot start too', async () => {
    const out = file('ok');
    // One word after --: through sh -c. It fails for keys named bad, records the others.
    const handler = `x=$(cat); case "$x" in *'"key":"wf/bad'*) exit 3;; esac; echo "$x" >> ${out}`;
    const run = startRoster(['watch', 'kv_prefix', 'wf/', '--', handler], { agent: cli.agent.url, timeoutMs: 60_000 });
    try {
      await until('the stream to be subscribed', async () => (await cli.http.put('/v1/kv/wf/probe', 'p')).text === 'true' && existsSync(out), 30_000);
      expect((await cli.http.put('/v1/kv/wf/bad', 'x')).text).toBe('true');
      await run.waitFor(/the handler exited 3 for upsert wf\/bad at index \d+; the watch goes on/, 30_000);
      expect((await cli.http.put('/v1/kv/wf/good', 'y')).text).toBe('true');
      await until('the call after the failure', () => readFileSync(out, 'utf8').includes('"key":"wf/good"'), 30_000);
    } finally {
      run.proc.kill('SIGINT');
    }
    expect((await run.exited).code).toBe(0);
    expect(readFileSync(out, 'utf8')).not.toContain('wf/bad');

    const missing = startRoster(['watch', 'kv_prefix', 'wf/', '--', 'no-such-handler-here', 'x'], { agent: cli.agent.url, timeoutMs: 60_000 });
    try {
      await missing.waitFor(/cannot run the handler no-such-handler-here: .*ENOENT.*; the watch goes on/, 30_000);
      expect(missing.proc.exitCode).toBeNull();
    } finally {
      missing.proc.kill('SIGINT');
    }
    expect((await missing.exited).code).toBe(0);
  }, 90_000);

  test('nothing after -- exits 2', async () => {
    const r = await roster(['watch', 'kv_prefix', 'wf/', '--'], { agent: cli.agent.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('roster: a handler command is required after --\n');
  });
});
