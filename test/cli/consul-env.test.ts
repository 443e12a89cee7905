// Goal: a shell set up for `consul` works with `roster`: CONSUL_HTTP_ADDR (host:port, http://, https://,
// with CONSUL_HTTP_SSL) finds the agent and CONSUL_HTTP_TOKEN_FILE / CONSUL_HTTP_TOKEN give the token, each
// only where Roster's own flag and variable are not set; a unix:// address is a usage error that sends
// nothing. A token from any source is sent with the blanks around it trimmed; one holding a control
// character (or anything but printable ASCII) is a usage error naming its source, never sent. Run as a user runs the command, against a started agent and two recording servers.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { roster, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-consul-env-');

/** A server that answers every request with an empty JSON list and records who was asked with what token. */
interface Recorder { addr: string; server: Server; calls: { path: string; authorization: string | undefined }[] }
let ours: Recorder;
let theirs: Recorder;

async function recorder(): Promise<Recorder> {
  const calls: Recorder['calls'] = [];
  const server = createServer((req, res) => {
    calls.push({ path: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { addr: `127.0.0.1:${(server.address() as AddressInfo).port}`, server, calls };
}

beforeAll(async () => {
  [ours, theirs] = await Promise.all([recorder(), recorder()]);
});
afterAll(async () => {
  for (const r of [ours, theirs]) await new Promise((done) => r?.server.close(done));
});

/** `roster members --json` with `env` (and `args` before it): the exit code, stderr, and which recorder took the call with what token. */
async function members(env: Record<string, string>, args: string[] = []) {
  const before = { ours: ours.calls.length, theirs: theirs.calls.length };
  const r = await roster(['members', '--json', ...args], { env });
  const took = ours.calls.length > before.ours ? 'ours' : theirs.calls.length > before.theirs ? 'theirs' : 'none';
  const call = took === 'ours' ? ours.calls.at(-1) : took === 'theirs' ? theirs.calls.at(-1) : undefined;
  return { code: r.code, stderr: r.stderr, took, authorization: call?.authorization };
}

describe('CONSUL_HTTP_ADDR', () => {
  test('host:port and http:// find the agent: kv put and get through it', async () => {
    const host = new URL(cli.agent.url).host;
    const put = await roster(['kv', 'put', 'consul-env/k', 'v1'], { env: { CONSUL_HTTP_ADDR: host } });
    expect(put, put.stderr).toMatchObject({ code: 0, stderr: '' });
    const get = await roster(['kv', 'get', 'consul-env/k'], { env: { CONSUL_HTTP_ADDR: `http://${host}` } });
    expect(get).toMatchObject({ code: 0, stdout: 'v1\n' });
  });

  test('ROSTER_HTTP_ADDR and --http-addr come first', async () => {
    expect(await members({ CONSUL_HTTP_ADDR: theirs.addr })).toMatchObject({ code: 0, took: 'theirs' });
    expect(await members({ CONSUL_HTTP_ADDR: theirs.addr, ROSTER_HTTP_ADDR: ours.addr })).toMatchObject({ code: 0, took: 'ours' });
    expect(await members({ CONSUL_HTTP_ADDR: theirs.addr }, ['--http-addr', ours.addr])).toMatchObject({ code: 0, took: 'ours' });
  });

  test('https:// and CONSUL_HTTP_SSL=true speak TLS (refused here by a plain server); an explicit http:// stays http', async () => {
    const tls: Record<string, string>[] = [{ CONSUL_HTTP_ADDR: `https://${theirs.addr}` }, { CONSUL_HTTP_ADDR: theirs.addr, CONSUL_HTTP_SSL: 'true' }];
    for (const env of tls) {
      const r = await members(env);
      expect(r.code, JSON.stringify(env)).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^roster: cannot reach the agent at https://${theirs.addr}: `));
    }
    expect(await members({ CONSUL_HTTP_ADDR: `http://${theirs.addr}`, CONSUL_HTTP_SSL: 'true' })).toMatchObject({ code: 0, took: 'theirs' });
    // CONSUL_HTTP_SSL is Consul's: it does not touch Roster's own address.
    expect(await members({ ROSTER_HTTP_ADDR: ours.addr, CONSUL_HTTP_SSL: 'true' })).toMatchObject({ code: 0, took: 'ours' });
  });

  test('a unix socket or a bad CONSUL_HTTP_SSL is a usage error; nothing is sent', async () => {
    const unix = await members({ CONSUL_HTTP_ADDR: 'unix:///var/run/consul.sock' });
    expect(unix).toMatchObject({ code: 2, took: 'none' });
    expect(unix.stderr).toBe('roster: CONSUL_HTTP_ADDR: "unix:///var/run/consul.sock" is a unix socket: the agent listens on TCP only; give host:port or http(s)://host:port\n');
    const ssl = await members({ CONSUL_HTTP_ADDR: theirs.addr, CONSUL_HTTP_SSL: 'yes' });
    expect(ssl).toMatchObject({ code: 2, took: 'none', stderr: 'roster: CONSUL_HTTP_SSL: "yes" is not true or false\n' });
  });
});

describe('CONSUL_HTTP_TOKEN and CONSUL_HTTP_TOKEN_FILE', () => {
  test('each is sent when Roster\'s own token is not given; the file before the variable, as consul does', async () => {
    writeFileSync(cli.file('token'), '  from-file\n');
    const env = { ROSTER_HTTP_ADDR: ours.addr };
    expect(await members({ ...env, CONSUL_HTTP_TOKEN: 'from-var' })).toMatchObject({ code: 0, authorization: 'Bearer from-var' });
    expect(await members({ ...env, CONSUL_HTTP_TOKEN: 'from-var', CONSUL_HTTP_TOKEN_FILE: cli.file('token') })).toMatchObject({ code: 0, authorization: 'Bearer from-file' });
    expect(await members({ ...env, CONSUL_HTTP_TOKEN_FILE: cli.file('token'), ROSTER_HTTP_TOKEN: 'roster-var' })).toMatchObject({ code: 0, authorization: 'Bearer roster-var' });
    expect(await members({ ...env, CONSUL_HTTP_TOKEN: 'from-var', ROSTER_HTTP_TOKEN: 'roster-var' }, ['--token', 'flag'])).toMatchObject({ code: 0, authorization: 'Bearer flag' });
    // An empty file holds no token: the variable is next.
    writeFileSync(cli.file('empty'), '\n');
    expect(await members({ ...env, CONSUL_HTTP_TOKEN: 'from-var', CONSUL_HTTP_TOKEN_FILE: cli.file('empty') })).toMatchObject({ code: 0, authorization: 'Bearer from-var' });
  });

  test('a token file that cannot be read, or is far too long for a token, is a usage error; nothing is sent', async () => {
    const missing = await members({ ROSTER_HTTP_ADDR: ours.addr, CONSUL_HTTP_TOKEN_FILE: cli.file('no-such-file') });
    expect(missing).toMatchObject({ code: 2, took: 'none', stderr: `roster: CONSUL_HTTP_TOKEN_FILE: cannot read ${cli.file('no-such-file')}: ENOENT\n` });
    writeFileSync(cli.file('huge'), 'x'.repeat(100_000));
    const huge = await members({ ROSTER_HTTP_ADDR: ours.addr, CONSUL_HTTP_TOKEN_FILE: cli.file('huge') });
    expect(huge).toMatchObject({ code: 2, took: 'none' });
    expect(huge.stderr).toContain('holds more than 16384 bytes, which is no token');
  });
});

describe('a token with blanks around it or a control character in it', () => {
  test('blanks and line ends around a token are trimmed, whichever source gives it', async () => {
    writeFileSync(cli.file('crlf-token'), 'from-file\r\n');
    const env = { ROSTER_HTTP_ADDR: ours.addr };
    expect(await members({ ...env, CONSUL_HTTP_TOKEN: 'from-var\n' })).toMatchObject({ code: 0, stderr: '', authorization: 'Bearer from-var' });
    expect(await members({ ...env, CONSUL_HTTP_TOKEN_FILE: cli.file('crlf-token') })).toMatchObject({ code: 0, authorization: 'Bearer from-file' });
    expect(await members({ ...env, ROSTER_HTTP_TOKEN: ' \troster-var\r\n' })).toMatchObject({ code: 0, authorization: 'Bearer roster-var' });
    expect(await members(env, ['--token', 'flag\n'])).toMatchObject({ code: 0, authorization: 'Bearer flag' });
    // Blanks alone are no token: the next source is read, as for an empty variable.
    expect(await members({ ...env, ROSTER_HTTP_TOKEN: '\n', CONSUL_HTTP_TOKEN: 'from-var' })).toMatchObject({ code: 0, authorization: 'Bearer from-var' });
  });

  test('a control character or non-ASCII inside is a usage error naming where the token came from; nothing is sent', async () => {
    writeFileSync(cli.file('two-lines'), 'first\nsecond\n');
    const env = { ROSTER_HTTP_ADDR: ours.addr };
    const control = 'a control character';
    const cases: [Record<string, string>, string[], string, string][] = [
      [{ CONSUL_HTTP_TOKEN: 'ab\x01c' }, [], 'CONSUL_HTTP_TOKEN', `${control} (U+0001)`],
      [{ ROSTER_HTTP_TOKEN: 'ab\ncd' }, [], 'ROSTER_HTTP_TOKEN', `${control} (U+000A)`],
      [{ CONSUL_HTTP_TOKEN_FILE: cli.file('two-lines') }, [], `CONSUL_HTTP_TOKEN_FILE (${cli.file('two-lines')})`, `${control} (U+000A)`],
      [{}, ['--token', 'ab\x7fc'], '--token', `${control} (U+007F)`],
      // No header carries it either: it would fail as the request is made.
      [{ CONSUL_HTTP_TOKEN: 'ab\u20acc' }, [], 'CONSUL_HTTP_TOKEN', 'a character that is not ASCII (U+20AC)'],
    ];
    for (const [vars, args, source, what] of cases) {
      const r = await members({ ...env, ...vars }, args);
      expect(r, source).toMatchObject({ code: 2, took: 'none' });
      expect(r.stderr).toBe(`roster: ${source}: the token holds ${what}; a token is printable ASCII without spaces\n`);
    }
  });
});
