// Goal: a gRPC check's probe owns its connection and closes it when it ends, whatever state it is in. Against
// targets that accept a connection and never speak HTTP/2, a started agent's open descriptors
// (/proc/<pid>/fd) and the connections the target holds stay at about one per check however many probes have
// run, and drop back once the checks are deregistered. A target failing the same way gives the same output
// at every probe (grpc-go's texts, nothing that changes between probes), so the failure is written once.
import { readdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
const servers: Server[] = [];
const open = new Set<Socket>();
let accepted = 0;
let silent = '';
let http1 = '';

const descriptors = () => readdirSync(`/proc/${agent.proc.pid}/fd`).length;
const checks = async () => (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>();

async function listen(onConnection: (s: Socket) => void): Promise<string> {
  const server = createServer(onConnection);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  // Accepts every connection and says nothing: the probe waits for the server's HTTP/2 preface until its timeout.
  silent = await listen((s) => {
    accepted++;
    open.add(s);
    s.on('error', () => {});
    s.resume(); // reads (and drops) what comes, so that the client's close is seen
    s.once('close', () => open.delete(s));
  });
  // Answers in HTTP/1 text, which is no HTTP/2 preface.
  http1 = await listen((s) => {
    s.on('error', () => {});
    s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'));
  });
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  for (const s of open) s.destroy();
  for (const s of servers) s.close();
});

test('probes of silent targets hold one connection at a time each, none once deregistered', async () => {
  await sleep(500);
  const before = descriptors();
  const ids = ['g1', 'g2', 'g3', 'g4', 'g5'];
  for (const id of ids) {
    const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: id, Name: id, GRPC: silent, Interval: '1s', Timeout: '1s' });
    expect(r.status, r.text).toBe(200);
  }
  // About four probes per check in 9 s (1 s timeout, then 1 s interval).
  await sleep(9000);
  expect(accepted).toBeGreaterThanOrEqual(15);
  expect(open.size).toBeLessThanOrEqual(ids.length);
  expect(descriptors()).toBeLessThanOrEqual(before + ids.length + 3);
  const seen = await checks();
  for (const id of ids) expect(seen[id]).toMatchObject({ Status: 'critical', Output: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded' });

  for (const id of ids) expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/${id}`)).status).toBe(200);
  for (let deadline = Date.now() + 5000; Date.now() < deadline && open.size > 0; ) await sleep(100);
  expect(open.size).toBe(0);
  expect(descriptors()).toBeLessThanOrEqual(before + 2);
}, 40_000);

test('a target that is not HTTP/2 gives the same grpc-go output at every probe', async () => {
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: 'h1', Name: 'h1', GRPC: http1, Interval: '1s', Timeout: '2s' });
  expect(r.status, r.text).toBe(200);
  const want = 'rpc error: code = Unavailable desc = connection error: desc = "error reading server preface: http2: frame too large"';
  const outputs = new Set<string>();
  let index = '';
  for (let deadline = Date.now() + 6000; Date.now() < deadline; await sleep(250)) {
    const check = (await checks())['h1'];
    if (check?.Status === 'critical' && check.Output !== '') outputs.add(check.Output);
    // The catalog's record: written once, its ModifyIndex unchanged by the probes after the first.
    const records = (await call(agent.url, 'GET', '/v1/health/state/critical')).json<Array<{ CheckID: string; Output: string; ModifyIndex: number }>>();
    const record = records.find((c) => c.CheckID === 'h1' && c.Output !== '');
    if (record !== undefined && index === '') index = String(record.ModifyIndex);
    if (record !== undefined) expect(String(record.ModifyIndex)).toBe(index);
  }
  expect([...outputs]).toEqual([want]);
  expect((await call(agent.url, 'PUT', '/v1/agent/check/deregister/h1')).status).toBe(200);
}, 30_000);
