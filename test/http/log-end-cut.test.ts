// Goal: acknowledged writes that vanish from the end of the log while the agent is stopped are not lost
// silently. The last segment cut at or inside a commit (`truncate -s`), cut by hand and the agent killed
// before it noticed, the newest of two segments emptied (`: >`) or removed: each start is refused with exit
// code 2, one `roster:` line naming the file, what is missing and what to do, and the data dir left as it
// was; following the advice starts the agent with the writes before the cut. A commit a crash tore (never
// acknowledged) is still cut by itself, every acknowledged write served.
import { execSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { call, type Agent } from '../support/agent.ts';
import { dataDirAgents } from '../support/data-dir-agents.ts';
import { encodeFrame, exitCodeOf, logLines, readFrames, segmentPaths } from '../faults/wal-crash-support.ts';

const { dataDir: newDataDir, agentOn } = dataDirAgents('kill9');

/** The refused start's `roster:` line, after checking it exited 2. */
async function refusal(dataDir: string): Promise<string> {
  const err: unknown = await agentOn(dataDir).then(() => undefined, (e: unknown) => e);
  expect(exitCodeOf(err), String(err)).toBe(2);
  return (err as Error).message.split('\n').find((l) => l.startsWith('roster: ')) ?? '';
}

/** Every file of wal/ and snap/ with its bytes. */
function contents(dataDir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const sub of ['wal', 'snap']) for (const name of readdirSync(join(dataDir, sub))) out.set(`${sub}/${name}`, readFileSync(join(dataDir, sub, name)).toString('base64'));
  return out;
}

/** A data dir with `n` keys written one commit each (`cut/<k>` = `v<k>`) by an agent, and the agent. */
async function written(n: number): Promise<{ dataDir: string; agent: Agent }> {
  const dataDir = newDataDir();
  const agent = await agentOn(dataDir);
  for (let k = 0; k < n; k++) expect((await call(agent.url, 'PUT', `/v1/kv/cut/${k}`, `v${k}`)).text).toBe('true');
  return { dataDir, agent };
}

/** The keys `cut/0`.. the agent serves, counted up to the first missing one; checks none after it is there. */
async function servedPrefix(agent: Agent, n: number): Promise<number> {
  const present: boolean[] = [];
  for (let k = 0; k < n; k++) present.push((await call(agent.url, 'GET', `/v1/kv/cut/${k}?raw`)).text === `v${k}`);
  const held = present.indexOf(false) === -1 ? n : present.indexOf(false);
  expect(present.slice(held).every((p) => !p)).toBe(true);
  return held;
}

/** Runs the shell command of the refusal that follows `after`, up to the next `;`. */
function follow(line: string, after: string): void {
  const at = line.indexOf(after);
  expect(at, line).toBeGreaterThan(-1);
  execSync(line.slice(at + after.length).split(';')[0]!.trim());
}

describe('the end of the log cut while the agent is stopped', () => {
  test('the last segment cut at a commit boundary: refused naming file and index, the data dir untouched; the advice starts it', async () => {
    const { dataDir, agent } = await written(60);
    await agent.kill9();
    const [seg] = segmentPaths(dataDir);
    const frames = readFrames(seg!);
    const cutAt = frames[30]!;
    truncateSync(seg!, cutAt.start);
    const before = contents(dataDir);
    const line = await refusal(dataDir);
    expect(line).toContain(`the last segment ${seg} ends at offset ${cutAt.start}, right after its last commit (index ${cutAt.entries[0]!.i - 1})`);
    expect(line).toContain(`was cut short, or a segment after it removed, while the agent was stopped, and entries acknowledged after index ${cutAt.entries[0]!.i - 1} may be lost`);
    expect(contents(dataDir)).toEqual(before);

    follow(line, 'with zeros after it: ');
    const again = await agentOn(dataDir);
    const held = await servedPrefix(again, 60);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(60);
  });

  test('the last segment cut inside a commit: refused, not taken for a torn write', async () => {
    const { dataDir, agent } = await written(60);
    await agent.kill9();
    const [seg] = segmentPaths(dataDir);
    const cutAt = readFrames(seg!)[30]!;
    truncateSync(seg!, cutAt.start + 20);
    const line = await refusal(dataDir);
    expect(line).toContain(`${seg} ends inside a commit at offset ${cutAt.start} (entries from index ${cutAt.entries[0]!.i}), before the end its header gives`);
    expect(line).not.toMatch(/never acknowledged/);
  });

  test('cut while running and killed before the agent noticed: the next start refuses', async () => {
    const { dataDir, agent } = await written(60);
    const [seg] = segmentPaths(dataDir);
    // Stopped first, so that its once-a-second check cannot find the cut and write the log afresh.
    agent.proc.kill('SIGSTOP');
    const cutAt = readFrames(seg!)[30]!.start;
    truncateSync(seg!, cutAt);
    await agent.kill9();
    expect(await refusal(dataDir)).toContain(`the last segment ${seg} ends at offset ${cutAt}, right after its last commit`);
  });

  test('a commit a crash tore (never acknowledged) is still cut by itself: every acknowledged write is served', async () => {
    const { dataDir, agent } = await written(20);
    await agent.kill9();
    const [seg] = segmentPaths(dataDir);
    const frames = readFrames(seg!);
    const end = frames.at(-1)!.end;
    const last = frames.at(-1)!.entries.at(-1)!.i;
    // A commit in flight: its first bytes landed in the zeros the WAL wrote past the last commit, the rest did not.
    const ghost = encodeFrame(JSON.stringify([{ i: last + 1, t: Date.now(), p: 'ghost-1', c: { t: 'kv.set', key: 'cut/ghost', value: null, flags: '0' } }]));
    const buf = readFileSync(seg!);
    ghost.copy(buf, end, 0, 30);
    writeFileSync(seg!, buf);
    const again = await agentOn(dataDir);
    expect(logLines(again.output()).filter((l) => /truncated a torn last commit/.test(l.msg ?? '')).map((l) => l.offset)).toEqual([end]);
    expect(await servedPrefix(again, 20)).toBe(20);
    expect((await call(again.url, 'GET', '/v1/kv/cut/ghost')).status).toBe(404);
  });
});

describe('the newest of two segments emptied or removed while the agent is stopped', () => {
  /** Writes large values until the log has rolled to a second segment and holds `extra` commits there; SIGKILL. */
  async function rolled(extra: number): Promise<{ dataDir: string; newest: string; older: string }> {
    const { dataDir, agent } = await written(5);
    const big = 'x'.repeat(500_000);
    for (let k = 0; segmentPaths(dataDir).length < 2; k++) {
      expect(k).toBeLessThan(400);
      expect((await call(agent.url, 'PUT', `/v1/kv/big/${k % 4}`, big)).status).toBe(200);
    }
    for (let k = 0; k < extra; k++) expect((await call(agent.url, 'PUT', `/v1/kv/late/${k}`, `l${k}`)).text).toBe('true');
    await agent.kill9();
    const [older, newest] = segmentPaths(dataDir);
    expect(readFrames(newest!).length).toBeGreaterThanOrEqual(extra);
    return { dataDir, newest: newest!, older: older! };
  }

  test('emptied: refused naming it and the entries it held; the advice starts the agent without them', async () => {
    const { dataDir, newest, older } = await rolled(10);
    writeFileSync(newest, '');
    const line = await refusal(dataDir);
    expect(line).toContain(`the last segment ${newest} holds no commit and 0 bytes`);
    expect(line).toContain(`${older} is sealed (it ends at its last commit), so ${newest} was emptied or cut short while the agent was stopped`);
    follow(line, `by giving ${newest} its zeros: `);
    const again = await agentOn(dataDir);
    expect(await servedPrefix(again, 5)).toBe(5);
    expect((await call(again.url, 'GET', '/v1/kv/late/0')).status).toBe(404);
  }, 120_000);

  test('removed: the older segment, now last, is sealed: refused', async () => {
    const { dataDir, newest, older } = await rolled(10);
    rmSync(newest);
    expect(await refusal(dataDir)).toMatch(new RegExp(`the last segment ${older} ends at offset \\d+, right after its last commit`));
  }, 120_000);
});
