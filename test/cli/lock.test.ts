// Goal: `roster lock <prefix> -- <command>` run as a user runs it: competing commands never overlap
// (their own timestamps show it), the command's exit code is ours, SIGINT reaches the command and the
// lock is released and the session destroyed, a lock held elsewhere makes `--timeout` end with
// "did not acquire lock" and exit 1 without running anything, and a lost lock stops the command.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { roster, startRoster, until, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-lock-');
const { file, read } = cli;

const lockEntry = async (prefix: string) => {
  const r = await cli.http.get(`/v1/kv/${prefix}/.lock`);
  return r.status === 200 ? r.json()[0] : undefined;
};
const sessionsNamed = async (name: string) => (await cli.http.get('/v1/session/list')).json<{ ID: string; Name: string }[]>().filter((s) => s.Name === name);

describe('mutual exclusion', () => {
  test('three competing roster lock commands run one at a time (start/end timestamps never overlap)', async () => {
    const log = file('intervals');
    const script = (id: string) => `echo "${id} start $(date +%s%N)" >> ${log}; sleep 0.4; echo "${id} end $(date +%s%N)" >> ${log}`;
    const runs = ['a', 'b', 'c'].map((id) => startRoster(['lock', 'compete', '--', script(id)], { agent: cli.agent.url, timeoutMs: 40_000 }));
    const results = await Promise.all(runs.map((r) => r.exited));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    const times = new Map<string, { start?: bigint; end?: bigint }>();
    for (const line of readFileSync(log, 'utf8').trim().split('\n')) {
      const [id, what, ns] = line.split(' ');
      const t = times.get(id!) ?? {};
      t[what as 'start' | 'end'] = BigInt(ns!);
      times.set(id!, t);
    }
    const intervals = [...times.values()].map((t) => [t.start!, t.end!] as const).sort((x, y) => (x[0] < y[0] ? -1 : 1));
    expect(intervals).toHaveLength(3);
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0] >= intervals[i - 1]![1]).toBe(true);
    expect((await lockEntry('compete')).Session).toBeUndefined();
    expect(await sessionsNamed('roster lock compete/.lock')).toEqual([]);
  }, 60_000);
});

describe('the command', () => {
  test('exits with the command\'s code; its output passes through; it sees the key, session and fencing index', async () => {
    const r = await roster(['lock', 'codes', '--', `echo "from child $ROSTER_LOCK_KEY $ROSTER_LOCK_INDEX"; test -n "$ROSTER_LOCK_SESSION" && exit 7`], { agent: cli.agent.url });
    expect(r.code).toBe(7);
    expect(r.stdout).toMatch(/^from child codes\/\.lock [1-9]\d*\n$/);
    expect((await lockEntry('codes')).Session).toBeUndefined();
  });

  test('several arguments run without a shell; a signal death is 128+n; a missing program 127', async () => {
    expect((await roster(['lock', 'codes', '--', 'sh', '-c', 'exit 9'], { agent: cli.agent.url })).code).toBe(9);
    expect((await roster(['lock', 'codes', '--', 'kill -TERM $$'], { agent: cli.agent.url })).code).toBe(143);
    const missing = await roster(['lock', 'codes', '--', 'no-such-program-here', 'x'], { agent: cli.agent.url });
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('roster: cannot run no-such-program-here');
    expect((await lockEntry('codes')).Session).toBeUndefined();
    expect(await sessionsNamed('roster lock codes/.lock')).toEqual([]);
  });

  test('SIGINT is forwarded to the command; then the lock is released, the session destroyed, the code returned', async () => {
    const marks = file('sigint');
    const child = `trap 'echo got-int >> ${marks}; exit 42' INT; echo ready >> ${marks}; while true; do sleep 0.1; done`;
    const run = startRoster(['lock', 'sig', '--', child], { agent: cli.agent.url });
    await until('the command to start', () => read('sigint').includes('ready'));
    expect((await lockEntry('sig')).Session).toBeDefined();
    run.proc.kill('SIGINT'); // to roster only (not its process group): the command hears it only if forwarded
    const r = await run.exited;
    expect(r.code).toBe(42);
    expect(read('sigint')).toBe('ready\ngot-int\n');
    expect((await lockEntry('sig')).Session).toBeUndefined();
    expect(await sessionsNamed('roster lock sig/.lock')).toEqual([]);
  });
});

describe('not acquiring', () => {
  test('a lock held by another session: --timeout 1s exits 1 with "did not acquire lock"; nothing ran', async () => {
    const holder = await cli.http.session({ Name: 'other-holder' });
    expect((await cli.http.put(`/v1/kv/held/.lock?acquire=${holder}`)).text).toBe('true');
    const started = Date.now();
    const r = await roster(['lock', '--timeout', '1s', 'held', '--', `touch ${file('never')}`], { agent: cli.agent.url });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('roster: did not acquire lock "held/.lock" within 1s\n');
    expect(existsSync(file('never'))).toBe(false);
    expect((await lockEntry('held')).Session).toBe(holder);
    expect(await sessionsNamed('roster lock held/.lock')).toEqual([]);
  });

  test('SIGINT while waiting: exit 130, the command never runs, the session is destroyed', async () => {
    const holder = await cli.http.session({ Name: 'other-holder-2' });
    expect((await cli.http.put(`/v1/kv/held2/.lock?acquire=${holder}`)).text).toBe('true');
    const run = startRoster(['lock', 'held2', '--', `touch ${file('never2')}`], { agent: cli.agent.url });
    await until('roster lock to wait', async () => (await sessionsNamed('roster lock held2/.lock')).length === 1);
    run.proc.kill('SIGINT');
    const r = await run.exited;
    expect(r.code).toBe(130);
    expect(existsSync(file('never2'))).toBe(false);
    expect(await sessionsNamed('roster lock held2/.lock')).toEqual([]);
    expect((await lockEntry('held2')).Session).toBe(holder);
  });

  test('when the free lock comes, the waiting command gets it', async () => {
    const holder = await cli.http.session({ Name: 'other-holder-3' });
    expect((await cli.http.put(`/v1/kv/later/.lock?acquire=${holder}`)).text).toBe('true');
    const run = startRoster(['lock', 'later', '--', `touch ${file('later')}`], { agent: cli.agent.url });
    await until('roster lock to wait', async () => (await sessionsNamed('roster lock later/.lock')).length === 1);
    expect((await cli.http.put(`/v1/kv/later/.lock?release=${holder}`)).text).toBe('true');
    expect((await run.exited).code).toBe(0);
    expect(existsSync(file('later'))).toBe(true);
  });
});

describe('losing the lock', () => {
  test('the session destroyed while the command runs: the command gets SIGTERM and roster exits 1', async () => {
    const marks = file('lost');
    const child = `trap 'echo got-term >> ${marks}; exit 0' TERM; echo ready >> ${marks}; while true; do sleep 0.1; done`;
    const run = startRoster(['lock', 'lost', '--', child], { agent: cli.agent.url });
    await until('the command to start', () => read('lost').includes('ready'));
    const [session] = await sessionsNamed('roster lock lost/.lock');
    expect((await cli.http.put(`/v1/session/destroy/${session!.ID}`)).status).toBe(200);
    const r = await run.exited;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('roster: lock lost:');
    expect(read('lost')).toBe('ready\ngot-term\n');
  });
});

describe('usage', () => {
  test.each([
    [['lock', 'p'], "missing required argument 'command'"],
    [['lock', 'p', '--'], 'a command to run is required'],
    [['lock', '--ttl', 'abc', 'p', '--', 'true'], '--ttl: "abc" is not a positive duration'],
    [['lock', '--timeout', '-1s', 'p', '--', 'true'], '--timeout: "-1s" is not a duration'],
  ])('%j exits 2', async (args, message) => {
    const r = await roster(args as string[], { agent: cli.agent.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(await sessionsNamed('roster lock p/.lock')).toEqual([]);
  });
});
