// Goal: an agent whose file descriptors are all taken (here by HTTP clients holding connections open)
// does not lose its log for good when a segment roll cannot open its file. Writes answer 503/1016 "out of
// file descriptors" while the shortage lasts, are accepted again once the connections are gone (no
// restart), and every acknowledged write is there after a restart.
import { Agent as HttpAgent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { startAgent, tempDataDir, type Agent } from '../support/agent.ts';

/** The agent's descriptor limit: some 30 are its own at rest, the rest are for the connections below. */
const descriptorsMax = 150;
/** Below kv_max_value_size (512 KiB); stored base64, so about 100 of them fill a 64 MiB segment. */
const value = 'v'.repeat(500_000);

const agents: Agent[] = [];
const held: Socket[] = [];

afterAll(async () => {
  for (const s of held) s.destroy();
  for (const a of agents) { await a.stop(); a.cleanup(); }
});

/** One keep-alive connection for every write of the test: opened before the descriptors run out, reused after. */
const keepAlive = new HttpAgent({ keepAlive: true, maxSockets: 1 });

function put(agent: Agent, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${agent.url}${path}`, { method: 'PUT', agent: keepAlive, headers: { 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens connections that each send a GET and stay open, until the agent stops taking new ones. */
async function takeDescriptors(agent: Agent): Promise<number> {
  const { port } = new URL(agent.url);
  const answered: boolean[] = [];
  for (let i = 0; i < descriptorsMax + 50; i++) {
    const s = connect(Number(port), '127.0.0.1');
    held.push(s);
    const k = answered.push(false) - 1;
    s.on('error', () => {});
    s.on('data', () => { answered[k] = true; });
    s.on('connect', () => s.write('GET /v1/status/leader HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  }
  await expect.poll(() => answered.filter(Boolean).length, { timeout: 10_000 }).toBeGreaterThan(descriptorsMax / 2);
  await new Promise((r) => setTimeout(r, 500));
  return answered.filter(Boolean).length;
}

test('a segment roll short of descriptors is waited out: 503 while it lasts, writes again once they are free, nothing lost', async () => {
  const dataDir = tempDataDir();
  // The limit is set by the shell that then becomes the agent (exec keeps the pid).
  const agent = await startAgent({ dataDir, wrap: ['sh', '-c', `ulimit -n ${descriptorsMax} && exec "$0" "$@"`] });
  agents.push(agent);
  // The keep-alive connection exists before the shortage.
  expect((await put(agent, '/v1/kv/first', 'x')).status).toBe(200);
  const answeredConnections = await takeDescriptors(agent);
  expect(answeredConnections).toBeLessThan(descriptorsMax);
  const acknowledged: string[] = [];
  let refused: { status: number; text: string } | undefined;
  for (let i = 0; i < 200 && refused === undefined; i++) {
    const r = await put(agent, `/v1/kv/big/${i}`, value);
    if (r.status === 200) acknowledged.push(`big/${i}`);
    else refused = r;
  }
  expect(refused?.status).toBe(503);
  expect(JSON.parse(refused!.text)).toMatchObject({ code: 1016, message: 'the agent cannot store writes now: it is out of file descriptors; retry later' });
  expect(acknowledged.length).toBeGreaterThan(50);
  // Still refused while the connections are held: the log waits, it has not failed.
  expect((await put(agent, '/v1/kv/while', 'x')).status).toBe(503);
  for (const s of held) s.destroy();
  await expect.poll(async () => (await put(agent, '/v1/kv/after', 'x')).status, { timeout: 15_000, interval: 500 }).toBe(200);
  expect(agent.output()).toMatch(/WAL: out of file descriptors; writes are refused until descriptors are free again/);
  expect(agent.output()).not.toMatch(/WAL failed/);
  keepAlive.destroy();
  expect(await agent.stop()).toBe(0);
  const again = await startAgent({ dataDir });
  agents.push(again);
  const keys = await (await fetch(`${again.url}/v1/kv/big/?keys`)).json() as string[];
  expect(keys.sort()).toEqual(acknowledged.sort());
  expect((await fetch(`${again.url}/v1/kv/after`)).status).toBe(200);
}, 120_000);
