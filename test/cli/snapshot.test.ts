// Goal: `roster snapshot save|inspect|restore` as an operator runs them against started agents: save writes
// the file (nothing else left behind) and prints its index and size; inspect reads it offline, shows the
// header, the counts and checksum OK (exit 0), or BAD for a damaged file (exit 1); restore refuses a damaged
// file without sending it and replaces a fresh agent's state with a good one.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { resignedSnapshot } from '../support/snapshot.ts';
import { roster } from './support.ts';

let source: Agent;
let target: Agent;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'roster-snap-cli-'));
  [source, target] = await Promise.all([startAgent(), startAgent()]);
  const c = client(source);
  for (let i = 0; i < 20; i++) await c.put(`/v1/kv/cli/${i}`, `v${i}`);
  await c.session({ Name: 's' });
}, 60_000);
afterAll(async () => {
  for (const a of [source, target]) { await a?.stop(); a?.cleanup(); }
  rmSync(dir, { recursive: true, force: true });
});

describe('roster snapshot', () => {
  const file = () => join(dir, 'backup.snap');

  test('save writes the file atomically and prints its index and size', async () => {
    const r = await roster(['snapshot', 'save', file()], { agent: source.url });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const size = readFileSync(file()).length;
    expect(r.stdout).toMatch(new RegExp(`^Saved snapshot to .*backup\\.snap: index \\d+, ${size} bytes\\n$`));
    expect(readdirSync(dir)).toEqual(['backup.snap']);
  });

  test('inspect shows the header, the counts and the checksum, offline', async () => {
    const r = await roster(['snapshot', 'inspect', file()]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Format +roster-snapshot version 1$/m);
    expect(r.stdout).toMatch(/^Node +node1$/m);
    expect(r.stdout).toMatch(/^Keys +20$/m);
    expect(r.stdout).toMatch(/^Sessions +1$/m);
    expect(r.stdout).toMatch(/^Checksum +OK$/m);
    expect(r.stdout).toMatch(/^Records +OK$/m);
    const j = await roster(['snapshot', 'inspect', '--json', file()]);
    expect(JSON.parse(j.stdout)).toMatchObject({ format: 'roster-snapshot', version: 1, counts: { keys: 20, sessions: 1 }, checksum: 'OK', records: 'OK' });
  });

  test('a damaged file: inspect says BAD and exits 1; restore refuses it without sending it', async () => {
    const text = gunzipSync(readFileSync(file()));
    text[text.indexOf('cli/1') + 2]! ^= 0x01;
    const damaged = join(dir, 'damaged.snap');
    writeFileSync(damaged, gzipSync(text));
    const r = await roster(['snapshot', 'inspect', damaged]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Checksum +BAD$/m);
    expect(r.stdout).toMatch(/^Records +not checked: the checksum does not hold$/m);
    const restore = await roster(['snapshot', 'restore', damaged], { agent: target.url });
    expect(restore.code).toBe(1);
    expect(restore.stderr).toMatch(/checksum mismatch, the file is damaged; nothing sent/);
    expect((await client(target).get('/v1/kv/cli/?keys')).status).toBe(404);
    const missing = await roster(['snapshot', 'inspect', join(dir, 'nope.snap')]);
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringMatching(/cannot read .*nope\.snap: ENOENT/)]);
    rmSync(damaged);
  });

  test('a file that is no snapshot at all: restore says so and sends nothing', async () => {
    const other = join(dir, 'notes.txt');
    writeFileSync(other, 'hello\n');
    const restore = await roster(['snapshot', 'restore', other], { agent: target.url });
    expect(restore).toMatchObject({ code: 1, stderr: `roster: ${other}: not a snapshot file (a snapshot is the gzip archive roster snapshot save or GET /v1/snapshot writes)\n` });
    rmSync(other);
  });

  test('a re-signed file with a record no agent writes: inspect names it and exits 1; restore sends it and the agent refuses it', async () => {
    const edited = join(dir, 'edited.snap');
    writeFileSync(edited, resignedSnapshot(readFileSync(file()), (d) => { d.kv[0].value = 'not base64!'; }));
    const r = await roster(['snapshot', 'inspect', edited]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Checksum +OK$/m);
    expect(r.stdout).toMatch(/^Records +kv\[0\] \(key "cli\/\d+"\)\.value: must be base64 text \(standard alphabet, padded\)$/m);
    const restore = await roster(['snapshot', 'restore', edited], { agent: target.url });
    expect(restore.code).toBe(1);
    expect(restore.stderr).toMatch(/snapshot refused, nothing changed: kv\[0\] \(key "cli\/\d+"\)\.value: must be base64 text/);
    expect((await client(target).get('/v1/kv/cli/?keys')).status).toBe(404);
    rmSync(edited);
  });

  test('restore replaces a fresh agent\'s state', async () => {
    const r = await roster(['snapshot', 'restore', file()], { agent: target.url });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Restored snapshot .*backup\.snap \(taken at index \d+\); the state is now at index \d+\n$/);
    const keys = async (a: Agent) => (await client(a).get('/v1/kv/cli/?keys')).json<string[]>();
    expect(await keys(target)).toEqual(await keys(source));
    expect(existsSync(file())).toBe(true);
  });
});
