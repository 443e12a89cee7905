// Goal: the HTTP edge as a client on the wire meets it, through a started agent: a head Roster cannot serve
// (a Transfer-Encoding it cannot read, Content-Length headers that differ, a path or query that is not
// UTF-8) is answered at once in the dialect's format and changes nothing; pipelined reads are answered in
// order; a write pipelined behind nothing it could wait for is never applied unanswered; check addresses
// are validated at registration; gRPC bytes that are not a request message are INVALID_ARGUMENT.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, expectError, startAgent, withAgent, type Agent } from '../support/in-process.ts';
import { rawExchange } from '../support/raw-http.ts';

const host = 'Host: localhost\r\n';

describe('seed dialect', () => {
  let agent: Agent;
  withAgent((a) => { agent = a; });

  /** ?consistent reads after a barrier entry: any write proposed before it has applied by then. */
  const missing = async (key: string) => (await client(agent).get(`/v1/kv/${key}?consistent`)).status === 404;

  test('Transfer-Encoding other than chunked: 400 at once, the connection closed, nothing written', async () => {
    const r = await rawExchange(agent.url, `PUT /v1/kv/edge/te HTTP/1.1\r\n${host}Transfer-Encoding: gzip\r\n\r\n`);
    expect(r.timedOut).toBe(false);
    expect(r.answers).toHaveLength(1);
    const a = r.answers[0]!;
    expect(a.status).toBe(400);
    expect(a.headers['x-request-id']).toBeTruthy();
    expect(a.headers.connection).toBe('close');
    expect(JSON.parse(a.body)).toMatchObject({ code: 1022, details: { 'Transfer-Encoding': ['Unsupported:gzip'] } });
    expect(await missing('edge/te')).toBe(true);
  });

  test('two Content-Length headers that differ: 400 at once, the connection closed, nothing written', async () => {
    const r = await rawExchange(agent.url, `PUT /v1/kv/edge/cl HTTP/1.1\r\n${host}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd`);
    expect(r.timedOut).toBe(false);
    expect(r.answers.map((a) => a.status)).toEqual([400]);
    expect(r.answers[0]!.headers['x-request-id']).toBeTruthy();
    expect(JSON.parse(r.answers[0]!.body)).toMatchObject({ code: 1022, details: { 'Content-Length': ['Conflict:send one Content-Length'] } });
    expect(await missing('edge/cl')).toBe(true);
  });

  test('two Content-Length headers that differ: a request behind the refused one in the same packet is never served', async () => {
    // The second request sits inside the longer length's body: a client or proxy framing by that length
    // sent one request, uWS framing by the first sees two. Its body is the next request's head if it waits.
    const smuggled = `PUT /v1/kv/edge/smuggled HTTP/1.1\r\n${host}Content-Length: 8\r\n\r\nsmuggled`;
    const capture = `PUT /v1/kv/edge/capture HTTP/1.1\r\n${host}Content-Length: 60\r\n\r\n`;
    for (const behind of [smuggled, capture]) {
      const front = `PUT /v1/kv/edge/front HTTP/1.1\r\n${host}Content-Length: 3\r\nContent-Length: ${3 + behind.length}\r\n\r\nabc`;
      const r = await rawExchange(agent.url, front + behind, {
        expect: 2, later: { afterMs: 100, bytes: `GET /v1/kv/secret HTTP/1.1\r\n${host}Authorization: Bearer victim\r\n\r\n` },
      });
      expect(r.timedOut).toBe(false);
      expect(r.closed).toBe(true);
      expect(r.answers.map((a) => a.status).filter((status) => status !== 400)).toEqual([]);
    }
    expect(await missing('edge/front')).toBe(true);
    expect(await missing('edge/smuggled')).toBe(true);
    expect(await missing('edge/capture')).toBe(true);
  });

  test('a raw path that is not UTF-8 is refused 400, so two different byte strings never name one key', async () => {
    for (const bad of [[0xff], [0xfe], [0xc3]]) {
      const head = Buffer.concat([Buffer.from('PUT /v1/kv/edge/u'), Buffer.from(bad), Buffer.from(` HTTP/1.1\r\n${host}Content-Length: 1\r\n\r\nx`)]);
      const r = await rawExchange(agent.url, head);
      expect(r.answers.map((a) => a.status)).toEqual([400]);
      expect(JSON.parse(r.answers[0]!.body)).toMatchObject({ code: 1022, details: { path: ['Encoding:not valid UTF-8'] } });
    }
    const keys = await client(agent).get('/v1/kv/edge/?keys');
    expect(keys.status).toBe(404);
  });

  test('percent-encoded bytes that are not UTF-8 are refused in the path and in the query', async () => {
    expectError(await client(agent).put('/v1/kv/edge/%FF', 'x'), 400, 1022);
    const r = await client(agent).get('/v1/kv/edge/x?separator=%FF');
    expect(expectError(r, 400, 1022).details).toEqual({ query: ['Encoding:not valid UTF-8'] });
    // Valid percent-encoded UTF-8 is a key like any other.
    expect((await client(agent).put('/v1/kv/edge/%E2%98%83', 'x')).status).toBe(200);
    expect((await client(agent).get('/v1/kv/edge/%E2%98%83?raw')).text).toBe('x');
  });

  test('pipelined reads are answered, all of them and in order', async () => {
    const ids = ['p-1', 'p-2', 'p-3', 'p-4', 'p-5'];
    const bytes = ids.map((id) => `GET /v1/status/leader HTTP/1.1\r\n${host}x-request-id: ${id}\r\n\r\n`).join('');
    const r = await rawExchange(agent.url, bytes, { expect: ids.length });
    expect(r.answers.map((a) => [a.status, a.headers['x-request-id']])).toEqual(ids.map((id) => [200, id]));
  });

  test.each([
    ['a PUT with a body', `PUT /v1/kv/edge/piped HTTP/1.1\r\n${host}Content-Length: 3\r\n\r\nabc`, false],
    ['a DELETE', `DELETE /v1/kv/edge/kept HTTP/1.1\r\n${host}\r\n`, true],
  ])('%s with a request pipelined behind it in the same packet is not applied unanswered', async (_name, write, keyExists) => {
    if (keyExists) expect((await client(agent).put('/v1/kv/edge/kept', 'v')).status).toBe(200);
    // uWebSockets.js closes a connection when a request arrives while an earlier one waits for its
    // answer (a platform limit); the write cannot be answered then, so it must not be applied either.
    const r = await rawExchange(agent.url, `${write}GET /v1/status/leader HTTP/1.1\r\n${host}\r\n`, { expect: 2 });
    if (r.answers.length === 0) {
      expect(r.closed).toBe(true);
      expect(await missing(keyExists ? 'edge/kept' : 'edge/piped')).toBe(!keyExists);
    } else {
      // Were both answered (a uWS that pipelines asynchronously), they must be the write and the read, in order.
      expect(r.answers.map((a) => a.status)).toEqual([200, 200]);
    }
  });

  test('a request sent while a write commits is answered after it, in order (the connection is paused meanwhile)', async () => {
    // The follower is sent 0–2 ms after the write: usually it arrives while the write waits for its
    // fsync, and must then be answered after it. When the kernel hands both over in one read (a loaded
    // machine), it is the same-packet case: the connection is closed and the write is not applied.
    const outcomes: string[] = [];
    for (let i = 0; i < 40; i++) {
      const body = `v${i}`;
      const write = `PUT /v1/kv/edge/paused/${i} HTTP/1.1\r\n${host}x-request-id: w-${i}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const read = `GET /v1/kv/edge/paused/${i}?raw HTTP/1.1\r\n${host}x-request-id: r-${i}\r\n\r\n`;
      const r = await rawExchange(agent.url, write, { expect: 2, later: { afterMs: i % 3, bytes: read } });
      const answers = r.answers.map((a) => `${a.headers['x-request-id']} ${a.status} ${a.body}`).join(', ');
      if (answers === '' && r.closed) outcomes.push((await missing(`edge/paused/${i}`)) ? 'closed, not applied' : 'closed, applied');
      else outcomes.push(answers === `w-${i} 200 true, r-${i} 200 v${i}` ? 'both in order' : `${answers}${r.timedOut ? ' (timed out)' : ''}`);
    }
    expect(outcomes.filter((o) => o !== 'both in order' && o !== 'closed, not applied')).toEqual([]);
    expect(outcomes).toContain('both in order');
  });

  test.each([
    ['TCP', '127.0.0.1'],
    ['TCP', 'localhost:0'],
    ['TCP', 'localhost:65536'],
    ['TCP', ':80'],
    ['TCP', '::1:80'],
    ['TCP', '[127.0.0.1]:80'],
    ['TCP', 'bad host:80'],
    ['TCP', 'host:http'],
    ['GRPC', '127.0.0.1'],
    ['GRPC', 'localhost:0/svc'],
    ['GRPC', '/svc'],
  ])('%s check address %j is refused 400 at registration', async (kind, address) => {
    const id = `addr-${kind}-${address}`;
    const r = await client(agent).put('/v1/agent/check/register', { ID: id, Name: 'addr', [kind]: address, Interval: '10s' });
    const body = expectError(r, 400, 1009);
    expect(Object.keys(body.details)).toEqual([kind]);
    const checks = (await client(agent).get('/v1/agent/checks')).json<Record<string, unknown>>();
    expect(checks[id]).toBeUndefined();
  });

  test.each([
    ['TCP', '127.0.0.1:1'],
    ['TCP', 'localhost:65535'],
    ['TCP', '[::1]:80'],
    ['TCP', 'db.example.test:5432'],
    ['GRPC', '127.0.0.1:1'],
    ['GRPC', '[::1]:50051/grpc.health.v1.Health'],
  ])('%s check address %j is accepted', async (kind, address) => {
    const id = `ok-${kind}-${address}`;
    const r = await client(agent).put('/v1/agent/check/register', { ID: id, Name: 'addr', [kind]: address, Interval: '1h' });
    expect(r.status).toBe(200);
    await client(agent).put(`/v1/agent/check/deregister/${encodeURIComponent(id)}`);
  });

  test('gRPC: bytes that are not a HealthCheckRequest answer INVALID_ARGUMENT, and the server keeps serving', async () => {
    const Client = grpc.makeGenericClientConstructor({}, 'Health');
    const c = new Client(agent.grpc, grpc.credentials.createInsecure());
    const send = (method: string, bytes: Buffer) => new Promise<grpc.ServiceError | null>((resolve) => {
      c.makeUnaryRequest(`/grpc.health.v1.Health/${method}`, () => bytes, (b: Buffer) => b, {}, (err) => resolve(err));
    });
    try {
      // A length-delimited field 1 claiming 100 bytes with one behind it; then wire type 7, which does not exist.
      for (const garbage of [Buffer.from([0x0a, 0x64, 0x61]), Buffer.from([0x0f, 0x01])]) {
        const err = await send('Check', garbage);
        expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
        expect(err?.details).toMatch(/^the \/grpc\.health\.v1\.Health\/Check request is not a valid protobuf message: /);
      }
      expect((await send('List', Buffer.from([0x0a, 0x64, 0x61])))?.code).toBe(grpc.status.INVALID_ARGUMENT);
      const watched = await new Promise<grpc.ServiceError>((resolve) => {
        const stream = c.makeServerStreamRequest('/grpc.health.v1.Health/Watch', () => Buffer.from([0x0a, 0x02, 0xff, 0xfe]), (b: Buffer) => b, {});
        stream.on('error', resolve);
        stream.on('data', () => undefined);
      });
      expect([watched.code, watched.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'the /grpc.health.v1.Health/Watch request is not a valid protobuf message: string field 1 is not valid UTF-8']);
      // An empty message is a valid request for "" (the server itself).
      expect(await send('Check', Buffer.alloc(0))).toBeNull();
    } finally {
      c.close();
    }
  });
});

describe('consul dialect', () => {
  let agent: Agent;
  beforeAll(async () => { agent = await startAgent({ args: ['--dialect', 'consul'] }); });
  afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

  test('refusals of unusable heads are plain text', async () => {
    const te = await rawExchange(agent.url, `PUT /v1/kv/edge/te HTTP/1.1\r\n${host}Transfer-Encoding: gzip\r\n\r\n`);
    expect(te.answers.map((a) => [a.status, a.body])).toEqual([[400, 'unsupported transfer encoding: "gzip"']]);
    const r = await call(agent.url, 'GET', '/v1/kv/edge/x?separator=%FF');
    expect([r.status, r.text]).toEqual([400, 'invalid UTF-8 in request query']);
  });
});
