// Goal: damage to the last acknowledged commit is never passed off as a torn write. With no snapshot
// holding it, the agent refuses to start (exit 2), naming the segment file, the offset and the entries,
// and leaves the data dir byte for byte as it was; with the bytes put back it serves every write. With a
// shutdown snapshot holding that commit, the agent starts, serves every acknowledged write and goes on.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { exitCodeOf, logLines, readFrames } from '../faults/wal-crash-support.ts';

const agents: Agent[] = [];
afterAll(async () => {
  for (const a of agents) { await a.stop(); a.cleanup(); }
});

async function start(dataDir: string): Promise<Agent> {
  const agent = await startAgent({ dataDir });
  agents.push(agent);
  return agent;
}

/** Every file under the data dir with its bytes (the LOCK aside: it belongs to whichever agent runs). */
function contents(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const sub of ['wal', 'snap']) for (const name of readdirSync(join(dir, sub))) out.set(`${sub}/${name}`, readFileSync(join(dir, sub, name)).toString('base64'));
  return out;
}

/** Writes five keys, one commit each; returns the values. */
async function writeFive(agent: Agent): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  for (let k = 1; k <= 5; k++) {
    expect((await client(agent).put(`/v1/kv/dmg/k${k}`, `value ${k}`)).text).toBe('true');
    values.set(`dmg/k${k}`, `value ${k}`);
  }
  return values;
}

async function expectServes(agent: Agent, values: Map<string, string>): Promise<void> {
  for (const [key, value] of values) expect((await client(agent).get(`/v1/kv/${key}?raw`)).text).toBe(value);
}

/** Flips one bit in the payload of the segment's last commit (the key dmg/k5 is in it); returns the frame. */
function damageLastCommit(seg: string): { start: number; firstIndex: number } {
  const buf = readFileSync(seg);
  const last = readFrames(seg).at(-1)!;
  expect(JSON.stringify(last.entries)).toContain('dmg/k5');
  buf[last.end - 4]! ^= 0x02;
  writeFileSync(seg, buf);
  return { start: last.start, firstIndex: last.entries[0]!.i };
}

describe('a damaged last commit', () => {
  test('without a snapshot holding it: exit 2 naming file, offset and entries; the data dir is untouched', async () => {
    const dataDir = tempDataDir();
    const first = await start(dataDir);
    const values = await writeFive(first);
    await first.kill9();
    const seg = join(dataDir, 'wal', readdirSync(join(dataDir, 'wal'))[0]!);
    const pristine = readFileSync(seg);
    const { start: offset, firstIndex } = damageLastCommit(seg);
    const before = contents(dataDir);

    const err: unknown = await startAgent({ dataDir }).then((a) => { agents.push(a); return undefined; }, (e: unknown) => e);
    expect(exitCodeOf(err)).toBe(2);
    const message = (err as Error).message;
    expect(message).toContain(`corrupt commit frame in ${seg} at offset ${offset}: crc mismatch`);
    expect(message).toContain(`so it was acknowledged (entries ${firstIndex}..`);
    expect(message).toContain(`truncate -s ${offset} ${seg} && truncate -s +1M ${seg}`);
    expect(message).not.toMatch(/never acknowledged/);
    expect(contents(dataDir)).toEqual(before);

    writeFileSync(seg, pristine);
    await expectServes(await start(dataDir), values);
  });

  test('with a shutdown snapshot holding it: the agent starts, serves every write and goes on', async () => {
    const dataDir = tempDataDir();
    const first = await start(dataDir);
    const values = await writeFive(first);
    expect(await first.stop()).toBe(0);
    const seg = join(dataDir, 'wal', readdirSync(join(dataDir, 'wal'))[0]!);
    const { start: offset } = damageLastCommit(seg);

    const second = await start(dataDir);
    const warned = logLines(second.output()).filter((l) => /snapshot holds all of it/.test(l.msg ?? ''));
    expect(warned.map((l) => [l.file, l.offset])).toEqual([[seg, offset]]);
    await expectServes(second, values);
    expect((await client(second).put('/v1/kv/dmg/after', 'after')).text).toBe('true');
    values.set('dmg/after', 'after');
    await second.kill9();
    await expectServes(await start(dataDir), values);
  });
});
