// Goal: checks against a target that accepts connections and never answers, with a Timeout of 720h, cannot
// keep a started agent's other checks from being probed. With limits.check_probes_max 4 and 8 such checks,
// a check whose endpoint starts answering 500 still turns critical within a few intervals: a probe due while
// every slot is taken takes back the slot of the probe that has held its own longest (past 2 s), which is
// stopped and says so in its check's output; no more than 4 probes run at once. A Timeout longer than the
// Interval is kept, as Consul keeps it, and a check's probe is never started while its last one still runs.
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let agent: Agent;
const servers: Array<Server | HttpServer> = [];
const held = new Set<Socket>();
let healthy = true;
let hangUrl = '';
let webUrl = '';

const metric = async (name: string) => {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text;
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
};
const checks = async () => (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>();
const register = async (body: object) => {
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', body);
  expect(r.status, r.text).toBe(200);
};

/** A target that accepts every connection and never says a word; `seen` counts the connections. */
async function hanging(seen: { count: number }): Promise<string> {
  const server = createServer((s) => {
    seen.count++;
    held.add(s);
    s.on('error', () => {});
    s.on('close', () => held.delete(s));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

beforeAll(async () => {
  hangUrl = await hanging({ count: 0 });
  const web = createHttpServer((_req, res) => { res.statusCode = healthy ? 200 : 500; res.end(healthy ? 'ok' : 'broken'); });
  servers.push(web);
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}/`;
  const config = join(tempDataDir(), 'agent.json');
  writeFileSync(config, JSON.stringify({ limits: { check_probes_max: 4 } }));
  agent = await startAgent({ args: ['--config-file', config] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  for (const s of held) s.destroy();
  for (const s of servers) s.close();
});

test('checks whose target never answers leave the others their probes', async () => {
  await register({ ID: 'web', Name: 'web', HTTP: webUrl, Interval: '1s' });
  for (let deadline = Date.now() + 5000; Date.now() < deadline && (await checks()).web?.Status !== 'passing'; ) await sleep(100);
  expect((await checks()).web?.Status).toBe('passing');
  for (let i = 0; i < 8; i++) await register({ ID: `hog-${i}`, Name: 'hog', HTTP: hangUrl, Interval: '1s', Timeout: '720h' });
  // Every slot taken by the hanging target, with more of its probes waiting.
  for (let deadline = Date.now() + 5000; Date.now() < deadline && held.size < 4; ) await sleep(100);
  expect(held.size).toBeGreaterThanOrEqual(4);
  healthy = false;
  let web = (await checks()).web;
  let running = 0;
  for (let deadline = Date.now() + 15_000; Date.now() < deadline && web?.Status !== 'critical'; await sleep(200)) {
    running = Math.max(running, await metric('roster_check_probes_running'));
    web = (await checks()).web;
  }
  expect(web).toMatchObject({ Status: 'critical', Output: `HTTP GET ${webUrl}: 500 Internal Server Error Output: broken` });
  expect(running).toBeLessThanOrEqual(4);
  // The probes stopped to free their slots say so.
  const stopped = 'Probe stopped: its target had kept it waiting longest while all 4 probe slots of the agent were taken (limits.check_probes_max)';
  for (let deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
    if (Object.values(await checks()).some((c) => c.Output === stopped)) break;
  }
  expect(Object.entries(await checks()).filter(([, c]) => c.Output === stopped).map(([id]) => id.slice(0, 4))).toContain('hog-');
  for (let i = 0; i < 8; i++) expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/hog-${i}`)).status).toBe(200);
}, 40_000);

test('a Timeout longer than the Interval is kept, and the next probe waits for the last one', async () => {
  const seen = { count: 0 };
  const url = await hanging(seen);
  await register({ ID: 'long', Name: 'long', HTTP: url, Interval: '1s', Timeout: '720h' });
  for (let deadline = Date.now() + 3000; Date.now() < deadline && seen.count === 0; ) await sleep(50);
  await sleep(2500);
  expect(seen.count).toBe(1);
  expect((await call(agent.url, 'PUT', '/v1/agent/check/deregister/long')).status).toBe(200);
}, 20_000);
