// Goal: GET /v1/agent/monitor on a started agent with authentication on, logging at info: a monitor gets the
// lines at the level it asks for (debug request lines the agent's own output leaves out), as text or as the
// agent's JSON lines, from its announcement on; a bad level, a missing token or one without agent read is
// refused; the monitor ends when its token expires, when the agent stops; a client that stops reading
// loses lines (told how many once it reads again) while the agent keeps serving. A monitor shows no name its
// token may not read: a request line's path past the route is `<hidden>` unless the token may read what it
// names (a key, a service, a session, the node a force-leave names), while a token that may read it, or
// everything, sees it whole.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, expectError, sleep } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import { pipelinedGets } from '../support/pipelined-gets.ts';

const secret = 'a-monitor-test-secret-long-enough-0123456789';
const tokens = new TokenAuthority({ secret, clockSkewSeconds: 0 });
const mint = (rules: Rule[], ttlSeconds = 600) => tokens.mint({ subject: 'ops', rules, ttlSeconds });
const agentRead: Rule[] = [{ resource: 'agent', prefix: '', access: 'read' }];
const everything: Rule[] = ['key', 'agent', 'operator', 'node', 'service', 'session'].map((resource) => ({ resource, prefix: '', access: 'write' }) as Rule);

interface Monitor {
  status: number;
  headers: IncomingMessage['headers'];
  text(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves when the agent ends the answer (or the connection breaks). */
  ended: Promise<void>;
  close(): void;
}

/** Opens a monitor and reads it as it comes. */
function openMonitor(url: string, query: string, token: string | undefined): Promise<Monitor> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v1/agent/monitor${query}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      const ended = new Promise<void>((done) => { res.once('end', done); res.once('close', done); });
      resolve({
        status: res.statusCode ?? 0, headers: res.headers, text: () => text, ended,
        waitFor: async (pattern, timeoutMs = 10_000) => {
          const until = Date.now() + timeoutMs;
          while (!pattern.test(text)) {
            if (Date.now() > until) throw new Error(`no ${pattern} within ${timeoutMs} ms; got:\n${text.slice(-2000)}`);
            await sleep(25);
          }
        },
        close: () => req.destroy(),
      });
    });
    req.once('error', reject);
    req.end();
  });
}

describe('/v1/agent/monitor', () => {
  const settings = { log_level: 'info', auth: { jwt_secret: secret, clock_skew: '0s' } };
  const a = useConfigAgent('roster-monitor-', settings);
  let admin: string;

  beforeAll(async () => {
    admin = await mint(everything);
  });

  test('a debug monitor gets the request lines the agent logging at info leaves out of its own output, as text', async () => {
    const m = await openMonitor(a.agent.url, '?loglevel=debug', await mint([...agentRead, { resource: 'key', prefix: 'monitored/', access: 'read' }]));
    try {
      expect(m.status).toBe(200);
      expect(m.headers['content-type']).toBe('text/plain; charset=utf-8');
      await m.waitFor(/\[INFO\] {2}monitor started: reqId=\S+ loglevel=debug subject=ops\n/);
      const put = await call(a.agent.url, 'PUT', '/v1/kv/monitored/key', 'v', { authorization: `Bearer ${admin}` });
      expect(put.status).toBe(200);
      await m.waitFor(/\[DEBUG\] request: reqId=\S+ method=PUT route=\/v1\/kv\/\* path=\/v1\/kv\/monitored\/key status=200 ms=/);
      // Each line: an ISO time, the level, the message and its fields.
      for (const line of m.text().trimEnd().split('\n')) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[[A-Z]+\] +\S/);
    } finally {
      m.close();
    }
    expect(a.agent.output()).not.toContain('monitored/key');
    expect(a.agent.output()).toContain('"msg":"monitor started"');
  });

  test('names the token may not read are hidden in request lines; a token that may read them sees them whole', async () => {
    const narrow = await mint([...agentRead, { resource: 'key', prefix: '', access: 'read' }, { resource: 'key', prefix: 'secret/', access: 'deny' }]);
    const keyed = await mint([...agentRead, { resource: 'key', prefix: 'secret/', access: 'read' }]);
    const all = await mint([...everything, { resource: 'check', prefix: '', access: 'read' }]);
    const monitors = await Promise.all([
      openMonitor(a.agent.url, '?loglevel=debug', narrow), openMonitor(a.agent.url, '?loglevel=debug&logjson', narrow),
      openMonitor(a.agent.url, '?loglevel=debug', keyed), openMonitor(a.agent.url, '?loglevel=debug', all),
    ]);
    const [narrowText, narrowJson, keyedText, allText] = monitors as [Monitor, Monitor, Monitor, Monitor];
    try {
      await Promise.all(monitors.map((m) => m.waitFor(/monitor started/)));
      const sid = (await call(a.agent.url, 'PUT', '/v1/session/create', {}, { authorization: `Bearer ${admin}` })).json<{ ID: string }>().ID;
      const send = (reqId: string, method: string, path: string, body?: string) =>
        call(a.agent.url, method, path, body, { authorization: `Bearer ${admin}`, 'x-request-id': reqId });
      expect((await send('put-secret', 'PUT', '/v1/kv/secret/db-password', 'hunter2')).status).toBe(200);
      expect((await send('put-app', 'PUT', '/v1/kv/app/config', 'v')).status).toBe(200);
      await send('get-service', 'GET', '/v1/catalog/service/payments');
      await send('session-info', 'GET', `/v1/session/info/${sid}`);
      await send('unmatched', 'GET', '/v1/nope/secret-thing');
      await send('force-leave', 'PUT', '/v1/agent/force-leave/ghost-node-9');
      await send('marker', 'GET', '/v1/agent/self');
      await Promise.all(monitors.map((m) => m.waitFor(/reqId=marker|"reqId":"marker"/)));
      const pathOf = (m: Monitor, reqId: string) => new RegExp(`reqId=${reqId} method=\\S+ route=\\S+ path=(\\S+) `).exec(m.text())?.[1];
      expect(['put-secret', 'put-app', 'get-service', 'session-info', 'unmatched', 'force-leave'].map((id) => pathOf(narrowText, id))).toEqual([
        '/v1/kv/<hidden>', '/v1/kv/app/config', '/v1/catalog/service/<hidden>', '/v1/session/info/<hidden>', '<hidden>',
        '/v1/agent/force-leave/<hidden>',
      ]);
      for (const name of ['db-password', 'payments', sid, 'secret-thing', 'ghost-node-9']) {
        expect(narrowText.text()).not.toContain(name);
        expect(narrowJson.text()).not.toContain(name);
      }
      const jsonLines = narrowJson.text().trimEnd().split('\n').map((l) => JSON.parse(l) as { reqId?: string; route?: string; path?: string });
      expect(jsonLines.find((l) => l.reqId === 'put-secret')).toMatchObject({ route: '/v1/kv/*', path: '/v1/kv/<hidden>' });
      // The token that may read the key sees its path, and not the key it may not read.
      expect(['put-secret', 'put-app'].map((id) => pathOf(keyedText, id))).toEqual(['/v1/kv/secret/db-password', '/v1/kv/<hidden>']);
      // A token that may read every name sees every line as it is.
      expect(['put-secret', 'get-service', 'session-info', 'unmatched', 'force-leave'].map((id) => pathOf(allText, id))).toEqual([
        '/v1/kv/secret/db-password', '/v1/catalog/service/payments', `/v1/session/info/${sid}`, '/v1/nope/secret-thing',
        '/v1/agent/force-leave/ghost-node-9',
      ]);
    } finally {
      for (const m of monitors) m.close();
    }
  });

  test('?logjson sends the agent\'s JSON lines; a monitor at error starts with its announcement and gets nothing below error', async () => {
    const json = await openMonitor(a.agent.url, '?loglevel=WARN&logjson', admin);
    const errors = await openMonitor(a.agent.url, '?loglevel=error', admin);
    try {
      expect(json.headers['content-type']).toBe('application/x-ndjson');
      await errors.waitFor(/monitor started: .*loglevel=error/);
      // A reload that changes a setting needing a restart logs a warning.
      a.write({ ...settings, datacenter: 'elsewhere' });
      expect((await call(a.agent.url, 'PUT', '/v1/agent/reload', undefined, { authorization: `Bearer ${admin}` })).status).toBe(200);
      await json.waitFor(/"msg":"reload: datacenter changed; it takes effect at the next restart"/);
      const lines = json.text().trimEnd().split('\n').map((l) => JSON.parse(l) as { level: number; msg: string; node: string });
      expect(lines[0]).toMatchObject({ level: 30, msg: 'monitor started', node: 'node1' });
      expect(lines.slice(1).every((l) => l.level >= 40)).toBe(true);
      await sleep(200);
      expect(errors.text().trimEnd().split('\n')).toHaveLength(1);
    } finally {
      json.close();
      errors.close();
      a.write(settings);
    }
  });

  test('refusals: an unknown level (400), no token (401), a token without agent read (403)', async () => {
    const bad = await call(a.agent.url, 'GET', '/v1/agent/monitor?loglevel=loud', undefined, { authorization: `Bearer ${admin}` });
    expect(expectError(bad, 400, 1009).message).toBe('loglevel must be trace, debug, info, warn or error, not "loud"');
    expectError(await call(a.agent.url, 'GET', '/v1/agent/monitor'), 401, 1002);
    const keysOnly = await mint([{ resource: 'key', prefix: '', access: 'write' }]);
    expectError(await call(a.agent.url, 'GET', '/v1/agent/monitor', undefined, { authorization: `Bearer ${keysOnly}` }), 403, 1004);
  });

  test('the monitor ends when its token expires', async () => {
    const m = await openMonitor(a.agent.url, '?loglevel=info', await mint(agentRead, 2));
    await m.waitFor(/monitor started/);
    const started = Date.now();
    await m.ended;
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('a client that stops reading loses lines, not the agent\'s memory, and is told how many once it reads again', async () => {
    const sock = connect(new URL(a.agent.url).port as unknown as number, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write(`GET /v1/agent/monitor?loglevel=debug HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
    sock.pause();
    // About 12 MB of request lines (each names its 1 KB path, whole), far more than the socket's buffers hold.
    const path = `/v1/kv/${'p'.repeat(1000)}`;
    const auth = { authorization: `Bearer ${admin}` };
    const sent = 10_000;
    // One request at a time on each connection: with authentication on, the agent does not take pipelined requests.
    const statuses = await pipelinedGets(a.agent.url, { count: sent, path: () => path, headers: [`Authorization: Bearer ${admin}`], connections: 16, depth: 1 });
    expect(statuses).toEqual({ 404: sent });
    // The agent serves meanwhile.
    expect((await call(a.agent.url, 'GET', '/v1/agent/self', undefined, auth)).status).toBe(200);
    let got = '';
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => { got += d; });
    sock.resume();
    const until = Date.now() + 15_000;
    while (!/monitor: \d+ log lines dropped: the client read too slowly/.test(got)) {
      if (Date.now() > until) throw new Error(`no dropped-lines line; read ${got.length} bytes`);
      await call(a.agent.url, 'GET', '/v1/kv/after-the-burst', undefined, auth);
      await sleep(50);
    }
    sock.destroy();
    const dropped = Number(/monitor: (\d+) log lines dropped/.exec(got)![1]);
    expect(dropped).toBeGreaterThan(0);
    // Less than the burst reached the client: the rest was dropped, not queued.
    expect(got.length).toBeLessThan(sent * 1024);
  }, 120_000);

  test('the agent stopping ends every monitor', async () => {
    const m = await openMonitor(a.agent.url, '?loglevel=info', admin);
    await m.waitFor(/monitor started/);
    await m.waitFor(/monitor started[^\n]*\n/);
    const stopped = a.agent.stop();
    await m.ended;
    expect(await stopped).toBe(0);
    expect(m.text()).toMatch(/shutting down: signal=SIGTERM/);
  });
});
