// Goal: several agent addresses (`--http-addr a,b,c` or ROSTER_HTTP_ADDR) as a user gives them: a request
// that cannot connect to one address goes to the next (kv, lock and the watch stream alike), an HTTP error
// answer is reported and never retried elsewhere, every address down names each one, and a malformed list
// is a usage error that sends nothing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { closedPort, roster, startRoster } from './support.ts';

let agent: Agent;
let http: ReturnType<typeof client>;
let dead: string;
/** A server that answers every request with HTTP 500 (and counts them). */
let failing: Server;
let failingAddr: string;
let failingHits = 0;

beforeAll(async () => {
  agent = await startAgent();
  http = client(agent);
  dead = `127.0.0.1:${await closedPort()}`;
  failing = createServer((_req, res) => { failingHits += 1; res.writeHead(500, { 'content-type': 'text/plain' }).end('storage on fire'); });
  await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
  failingAddr = `127.0.0.1:${(failing.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => failing?.close(r));
  await agent?.stop();
  agent?.cleanup();
});

describe('failing over on a connection error', () => {
  test('--http-addr dead,agent: kv put and get go to the agent', async () => {
    const put = await roster(['kv', 'put', '--http-addr', `${dead},${agent.url}`, 'fo/k', 'v1']);
    expect(put, put.stderr).toMatchObject({ code: 0, stderr: '' });
    expect((await http.get('/v1/kv/fo/k?raw')).text).toBe('v1');
    const get = await roster(['kv', 'get', `-http-addr=${dead}, ${new URL(agent.url).host}`, 'fo/k']);
    expect(get).toMatchObject({ code: 0, stdout: 'v1\n', stderr: '' });
  });

  test('ROSTER_HTTP_ADDR with a list works the same', async () => {
    const r = await roster(['kv', 'get', 'fo/k'], { env: { ROSTER_HTTP_ADDR: `${dead},${agent.url}` } });
    expect(r).toMatchObject({ code: 0, stdout: 'v1\n' });
  });

  test('roster lock: the session, the lock and the release all reach the agent', async () => {
    const r = await roster(['lock', '--http-addr', `${dead},${agent.url}`, 'fo-lock', '--', 'echo "held $ROSTER_LOCK_INDEX"']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^held [1-9]\d*\n$/);
    expect((await http.get('/v1/kv/fo-lock/.lock')).json()[0].Session).toBeUndefined();
  });

  test('roster watch: the stream opens on the next address', async () => {
    const run = startRoster(['watch', '--json', '--http-addr', `${dead},${agent.url}`, 'kv_prefix', 'fo/']);
    try {
      await run.waitFor(/"end_of_snapshot"/);
      expect(run.stdout()).toContain('"key":"fo/k"');
    } finally {
      run.proc.kill('SIGINT');
    }
    expect((await run.exited).code).toBe(0);
  });
});

describe('no failover', () => {
  test('an HTTP error answer from the first address is reported; the next address is not asked', async () => {
    const before = failingHits;
    const r = await roster(['kv', 'get', '--http-addr', `${failingAddr},${agent.url}`, 'fo/k']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('roster: storage on fire\n');
    expect(r.stdout).toBe('');
    expect(failingHits).toBe(before + 1);
  });

  test('every address down: exit 1 naming each', async () => {
    const other = `127.0.0.1:${await closedPort()}`;
    const r = await roster(['kv', 'get', '--http-addr', `${dead},${other}`, 'fo/k']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`roster: cannot reach any agent (http://${dead}: ECONNREFUSED; http://${other}: ECONNREFUSED)\n`);
  });

  test('an empty or malformed address in the list exits 2 and sends nothing', async () => {
    const before = failingHits;
    const empty = await roster(['kv', 'put', '--http-addr', `${failingAddr},,${agent.url}`, 'fo/bad', 'x']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('has an empty address');
    const bad = await roster(['kv', 'put', '--http-addr', `${failingAddr},ftp://h:1`, 'fo/bad', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"ftp://h:1" must use http or https');
    expect(failingHits).toBe(before);
    expect((await http.get('/v1/kv/fo/bad')).status).toBe(404);
  });
});
