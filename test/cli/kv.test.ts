// Goal: `roster kv get|put|delete` run as a user runs them against a real agent: values round-trip
// (text, stdin, files, base64, uint64 flags), -cas / -acquire / -release / -recurse behave like
// `consul kv`, Consul's single-dash flags work, --json is valid JSON, a refused write exits 1 with the
// agent's message, and a bad command line exits 2 and changes nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { roster } from './support.ts';

let agent: Agent;
let http: ReturnType<typeof client>;
let run: (args: string[], input?: string | Buffer) => ReturnType<typeof roster>;
let scratch: string;

beforeAll(async () => {
  agent = await startAgent();
  http = client(agent);
  run = (args, input) => roster(args, { agent: agent.url, ...(input !== undefined ? { input } : {}) });
  scratch = mkdtempSync(join(tmpdir(), 'roster-cli-kv-'));
});
afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A loopback port nobody listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const entryOf = async (key: string) => {
  const r = await http.get(`/v1/kv/${key}`);
  return r.status === 200 ? r.json()[0] : undefined;
};

describe('put and get', () => {
  test('a value round-trips: put prints success, get prints the value, --json the entry', async () => {
    const put = await run(['kv', 'put', 'rt/greeting', 'hello world']);
    expect(put).toMatchObject({ code: 0, stdout: 'Success! Data written to: rt/greeting\n', stderr: '' });
    const get = await run(['kv', 'get', 'rt/greeting']);
    expect(get).toMatchObject({ code: 0, stdout: 'hello world\n' });
    const json = await run(['kv', 'get', 'rt/greeting', '--json']);
    expect(json.code).toBe(0);
    const entry = JSON.parse(json.stdout);
    expect(entry).toMatchObject({ Key: 'rt/greeting', Value: Buffer.from('hello world').toString('base64'), Flags: 0 });
    expect(entry.ModifyIndex).toBe((await entryOf('rt/greeting')).ModifyIndex);
    // Output to a pipe carries no colour escapes.
    expect(put.stdout + get.stdout).not.toContain('\u001b[');
  });

  test('values from stdin (-), from a file (@path) and as base64; uint64 flags stay exact', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255, 10]);
    expect((await run(['kv', 'put', 'rt/stdin', '-'], bytes)).code).toBe(0);
    expect(Buffer.from((await entryOf('rt/stdin')).Value, 'base64')).toEqual(bytes);
    const file = join(scratch, 'value.bin');
    writeFileSync(file, 'from a file');
    expect((await run(['kv', 'put', 'rt/file', `@${file}`])).code).toBe(0);
    expect((await http.get('/v1/kv/rt/file?raw')).text).toBe('from a file');
    expect((await run(['kv', 'put', '-base64', 'rt/b64', Buffer.from('decoded').toString('base64')])).code).toBe(0);
    expect((await http.get('/v1/kv/rt/b64?raw')).text).toBe('decoded');
    expect((await run(['kv', 'get', '-base64', 'rt/b64'])).stdout).toBe(`${Buffer.from('decoded').toString('base64')}\n`);
    expect((await run(['kv', 'put', '-flags=18446744073709551615', 'rt/flags', 'x'])).code).toBe(0);
    const json = await run(['kv', 'get', 'rt/flags', '--json']);
    expect(json.stdout).toContain('"Flags":18446744073709551615');
    const detailed = await run(['kv', 'get', 'rt/flags', '-detailed']);
    expect(detailed.stdout).toMatch(/^Flags\s+18446744073709551615$/m);
    expect(detailed.stdout).toMatch(/^Session\s+-$/m);
  });

  test('a missing key exits 1 with the agent\'s message; nothing on stdout', async () => {
    const r = await run(['kv', 'get', 'rt/absent']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('roster: key "rt/absent" not found\n');
  });
});

describe('-cas', () => {
  test('a write at the wrong modify index exits 1 and changes nothing; at the right one it applies', async () => {
    await run(['kv', 'put', 'cas/k', 'one']);
    const index = (await entryOf('cas/k')).ModifyIndex as number;
    const wrong = await run(['kv', 'put', `-cas=${index + 1000}`, 'cas/k', 'two']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe('roster: did not apply: the check-and-set index did not match\n');
    expect((await http.get('/v1/kv/cas/k?raw')).text).toBe('one');
    const right = await run(['kv', 'put', '--json', `--cas=${index}`, 'cas/k', 'two']);
    expect(right.code).toBe(0);
    expect(JSON.parse(right.stdout)).toMatchObject({ ok: true, key: 'cas/k' });
    expect((await http.get('/v1/kv/cas/k?raw')).text).toBe('two');
  });

  test('Consul\'s two-flag form -cas -modify-index=N, and -cas=0 writes only a new key', async () => {
    await run(['kv', 'put', 'cas/m', 'one']);
    const index = (await entryOf('cas/m')).ModifyIndex as number;
    expect((await run(['kv', 'put', '-cas', `-modify-index=${index}`, 'cas/m', 'two'])).code).toBe(0);
    expect((await http.get('/v1/kv/cas/m?raw')).text).toBe('two');
    expect((await run(['kv', 'put', '-cas=0', 'cas/m', 'three'])).code).toBe(1);
    expect((await http.get('/v1/kv/cas/m?raw')).text).toBe('two');
    expect((await run(['kv', 'put', '-cas=0', 'cas/new', 'first'])).code).toBe(0);
    expect((await http.get('/v1/kv/cas/new?raw')).text).toBe('first');
  });

  test('delete -cas: the wrong index keeps the key, the right one deletes it', async () => {
    await run(['kv', 'put', 'cas/d', 'x']);
    const index = (await entryOf('cas/d')).ModifyIndex as number;
    const wrong = await run(['kv', 'delete', `-cas=${index + 1000}`, 'cas/d']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('did not apply');
    expect(await entryOf('cas/d')).toBeDefined();
    const right = await run(['kv', 'delete', `-cas=${index}`, 'cas/d']);
    expect(right).toMatchObject({ code: 0, stdout: 'Success! Deleted key: cas/d\n' });
    expect(await entryOf('cas/d')).toBeUndefined();
  });
});

describe('-acquire and -release', () => {
  test('a session takes the lock, another cannot (exit 1, "did not acquire lock"), release frees it', async () => {
    const s1 = await http.session({ Name: 'cli-a' });
    const s2 = await http.session({ Name: 'cli-b' });
    const take = await run(['kv', 'put', '-acquire', `-session=${s1}`, 'locks/a', 'holder-1']);
    expect(take).toMatchObject({ code: 0, stdout: 'Success! Lock acquired on: locks/a\n' });
    expect((await entryOf('locks/a')).Session).toBe(s1);
    const other = await run(['kv', 'put', '--acquire', '--session', s2, 'locks/a', 'holder-2']);
    expect(other.code).toBe(1);
    expect(other.stdout).toBe('');
    expect(other.stderr).toBe('roster: did not acquire lock\n');
    expect((await entryOf('locks/a')).Session).toBe(s1);
    const wrongRelease = await run(['kv', 'put', '-release', `-session=${s2}`, 'locks/a']);
    expect(wrongRelease.code).toBe(1);
    expect(wrongRelease.stderr).toContain('did not release lock');
    const release = await run(['kv', 'put', '-release', `-session=${s1}`, 'locks/a', 'released']);
    expect(release).toMatchObject({ code: 0, stdout: 'Success! Lock released on: locks/a\n' });
    const entry = await entryOf('locks/a');
    expect(entry.Session).toBeUndefined();
    expect(entry.LockIndex).toBe(1);
  });

  test('an unknown session is the agent\'s error, exit 1', async () => {
    const r = await run(['kv', 'put', '-acquire', '-session=00000000-0000-0000-0000-000000000000', 'locks/b', 'x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^roster: invalid session "00000000-0000-0000-0000-000000000000"\n$/);
    expect(await entryOf('locks/b')).toBeUndefined();
  });
});

describe('-recurse and -keys', () => {
  test('get -recurse prints key:value lines (--json the entries), -keys the keys, delete -recurse the subtree', async () => {
    for (const [k, v] of [['tree/a', '1'], ['tree/b/c', '2'], ['tree/b/d', '3'], ['treeless', 'x']]) await run(['kv', 'put', k!, v!]);
    const lines = await run(['kv', 'get', '-recurse', 'tree/']);
    expect(lines).toMatchObject({ code: 0, stdout: 'tree/a:1\ntree/b/c:2\ntree/b/d:3\n' });
    const json = await run(['kv', 'get', '-recurse', 'tree/', '--json']);
    expect((JSON.parse(json.stdout) as { Key: string }[]).map((e) => e.Key)).toEqual(['tree/a', 'tree/b/c', 'tree/b/d']);
    expect((await run(['kv', 'get', '-keys', 'tree/'])).stdout).toBe('tree/a\ntree/b/\n');
    expect(JSON.parse((await run(['kv', 'get', '-keys', '-separator=', 'tree/', '--json'])).stdout)).toEqual(['tree/a', 'tree/b/c', 'tree/b/d']);
    const del = await run(['kv', 'delete', '-recurse', 'tree/']);
    expect(del).toMatchObject({ code: 0, stdout: 'Success! Deleted keys with prefix: tree/\n' });
    expect((await http.get('/v1/kv/tree/?recurse')).status).toBe(404);
    expect(await entryOf('treeless')).toBeDefined();
    // An empty prefix lists nothing and is not an error, as `consul kv get -recurse` prints nothing.
    expect(await run(['kv', 'get', '-recurse', 'tree/'])).toMatchObject({ code: 0, stdout: '' });
    expect(JSON.parse((await run(['kv', 'get', '-recurse', 'tree/', '--json'])).stdout)).toEqual([]);
  });
});

describe('usage errors exit 2 and send nothing', () => {
  test.each([
    [['kv', 'put', '-acquire', 'bad/a', 'x'], '--acquire needs --session <id>'],
    [['kv', 'put', '-cas=abc', 'bad/b', 'x'], '--cas: "abc" is not an unsigned 64-bit integer'],
    [['kv', 'put', '-flags=18446744073709551616', 'bad/c', 'x'], '--flags: "18446744073709551616" is not an unsigned 64-bit integer'],
    [['kv', 'put', '-cas=1', '-acquire', '-session=s', 'bad/d', 'x'], '--cas and --acquire cannot be combined'],
    [['kv', 'put', '-base64', 'bad/e', 'not base64!'], '--base64: the value is not valid base64'],
    [['kv', 'put', 'bad/f', '@/nonexistent/file'], 'cannot read /nonexistent/file: ENOENT'],
    [['kv', 'delete', '-recurse', '-cas=1', 'bad/g'], '--recurse and --cas cannot be combined'],
    [['kv', 'get'], 'a key is required'],
    [['kv', 'put', '--bogus', 'bad/h', 'x'], "unknown option '--bogus'"],
    [['--token', 't', 'kv', 'put', 'bad/i', 'x'], "unknown option '--token': --token is an option of each command, given after it (roster kv get --token … <key>)"],
  ])('%j', async (args, message) => {
    const r = await run(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`roster: ${message}`);
    expect(r.stdout).toBe('');
    expect((await http.get('/v1/kv/bad/?recurse')).status).toBe(404);
  });
});

describe('finding the agent', () => {
  test('--http-addr (also -http-addr=, with or without http://) wins over ROSTER_HTTP_ADDR', async () => {
    await run(['kv', 'put', 'addr/k', 'v']);
    const hostPort = new URL(agent.url).host;
    const wrong = { ROSTER_HTTP_ADDR: `127.0.0.1:${await closedPort()}` };
    for (const flag of [['--http-addr', hostPort], [`-http-addr=${agent.url}`], [`--http-addr=http://${hostPort}`]]) {
      const r = await roster(['kv', 'get', ...flag, 'addr/k'], { env: wrong });
      expect(r).toMatchObject({ code: 0, stdout: 'v\n' });
    }
    expect(await roster(['kv', 'get', 'addr/k'], { env: { ROSTER_HTTP_ADDR: hostPort } })).toMatchObject({ code: 0, stdout: 'v\n' });
  });

  test('an unreachable agent exits 1 naming the address; a malformed address exits 2', async () => {
    const closed = await closedPort();
    const down = await roster(['kv', 'get', 'addr/k'], { env: { ROSTER_HTTP_ADDR: `127.0.0.1:${closed}` } });
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`roster: cannot reach the agent at http://127.0.0.1:${closed}: ECONNREFUSED\n`);
    const bad = await roster(['kv', 'get', 'addr/k', '--http-addr', 'http://[bad']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--http-addr: "http://[bad" is not an address');
  });
});
