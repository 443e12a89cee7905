// Goal: the record of a clean close (`snap/closed`) lets a start go on from the shutdown snapshot whatever
// became of the segments, but it is not trusted over the segments themselves: one left or planted by hand
// after a crash, naming the newest snapshot while whole commits past it are in the log, does not make the
// agent drop those acknowledged entries when the log is damaged. The start is refused (exit 2) as without
// the record, saying why the record does not hold, and the data dir is left as it was.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';
import { exitCodeOf, readFrames, segmentPaths } from '../faults/wal-crash-support.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Every file of wal/ and snap/ with its bytes. */
function contents(dataDir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const sub of ['wal', 'snap']) for (const name of readdirSync(join(dataDir, sub))) out.set(`${sub}/${name}`, readFileSync(join(dataDir, sub, name)).toString('base64'));
  return out;
}

test('a record of a clean close naming the snapshot, with whole commits past it and the last one damaged: refused, not started from the snapshot', async () => {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const agent = await startAgent({ dataDir, args: ['--snapshot-every', '10'] });
  started.push(agent);
  for (let k = 0; k < 40; k++) expect((await call(agent.url, 'PUT', `/v1/kv/rec/${k}`, `v${k}`)).text).toBe('true');
  const snapshots = () => readdirSync(join(dataDir, 'snap')).filter((n) => n.endsWith('.snap'));
  await until('a snapshot', async () => (snapshots().length > 0 ? true : undefined), 10_000);
  await agent.kill9();
  const snapIndex = Number(snapshots().sort().at(-1)!.slice(0, 20));
  const [seg] = segmentPaths(dataDir);
  const frames = readFrames(seg!);
  const last = frames.at(-1)!;
  expect(last.entries[0]!.i).toBeGreaterThan(snapIndex + 1);
  // The record, as a clean close writes it, though the agent was killed with entries past the snapshot.
  writeFileSync(join(dataDir, 'snap', 'closed'), `${JSON.stringify({ index: snapIndex })}\n`);
  const buf = readFileSync(seg!);
  buf[last.end - 4]! ^= 0x02;
  writeFileSync(seg!, buf);
  const before = contents(dataDir);

  const err: unknown = await startAgent({ dataDir }).then((a) => { started.push(a); return undefined; }, (e: unknown) => e);
  expect(exitCodeOf(err), String(err)).toBe(2);
  const line = (err as Error).message.split('\n').find((l) => l.startsWith('roster: ')) ?? '';
  expect(line).toContain(`corrupt commit frame in ${seg} at offset ${last.start}: crc mismatch`);
  expect(line).toContain(`the record of a clean close at ${snapIndex} (${join(dataDir, 'snap', 'closed')}) does not hold: `
    + `the segments hold whole commits up to index ${frames.at(-2)!.entries.at(-1)!.i} past it`);
  expect(contents(dataDir)).toEqual(before);
}, 60_000);
