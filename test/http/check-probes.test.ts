// Goal: the probes of a started agent's checks are bounded by `limits.check_probes_max`. Against a target
// that takes a second to answer each request, no more of its requests are in progress at once than the
// limit; the other probes wait their turn (shown by the metrics) and still run, every check getting its
// result; a reload raises the limit for the probes that follow; a bad value stops the start.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let agent: Agent;
let configFile: string;
let target: Server;
let inProgress = 0;
let mostInProgress = 0;

const writeLimits = (limits: object) => writeFileSync(configFile, JSON.stringify({ limits }));
const metric = async (name: string) => {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text;
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
};

beforeAll(async () => {
  // Answers every request after a second, counting the requests it is answering: a probe's next request
  // can only follow the answer to its last, so the count is the number of probes holding a connection.
  target = createServer((req, res) => {
    inProgress++;
    mostInProgress = Math.max(mostInProgress, inProgress);
    setTimeout(() => { inProgress--; res.end('ok'); }, 1000);
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  configFile = join(tempDataDir(), 'agent.json');
  writeLimits({ check_probes_max: 2 });
  agent = await startAgent({ args: ['--config-file', configFile] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  target.closeAllConnections();
  await new Promise<void>((resolve) => target.close(() => resolve()));
});

test('at most check_probes_max probes are in progress; the others wait their turn and still run', async () => {
  const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
  for (let i = 0; i < 6; i++) {
    const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { Name: `slow ${i}`, CheckID: `slow-${i}`, HTTP: url, Interval: '1s' });
    expect(r.status, r.text).toBe(200);
  }
  // While the probes run: two at a time, the others waiting.
  let waitingSeen = 0;
  for (let i = 0; i < 20 && waitingSeen === 0; i++, await sleep(100)) waitingSeen = await metric('roster_check_probes_waiting');
  expect(waitingSeen).toBeGreaterThan(0);
  expect(await metric('roster_check_probes_running')).toBeLessThanOrEqual(2);
  // Every check is probed: each gets the target's answer.
  const answered = `HTTP GET ${url}: 200 OK Output: ok`;
  for (let deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(250)) {
    const checks = (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Output: string }>>();
    if (Object.values(checks).filter((c) => c.Output === answered).length === 6) break;
  }
  const checks = (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Output: string }>>();
  expect(Object.entries(checks).filter(([, c]) => c.Output === answered).map(([id]) => id).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `slow-${i}`));
  expect(mostInProgress).toBe(2);
}, 40_000);

test('a reload raises the limit for the probes that follow', async () => {
  writeLimits({ check_probes_max: 10 });
  expect((await call(agent.url, 'PUT', '/v1/agent/reload')).status).toBe(200);
  // The probes keep the phases they had in pairs: more than two are now in progress at times.
  mostInProgress = 0;
  for (let deadline = Date.now() + 10_000; Date.now() < deadline && mostInProgress <= 2; ) await sleep(100);
  expect(mostInProgress).toBeGreaterThan(2);
  expect(await metric('roster_check_probes_waiting')).toBe(0);
}, 20_000);

test('a limit that is not a positive whole number stops the start', async () => {
  const file = join(tempDataDir(), 'bad.json');
  writeFileSync(file, JSON.stringify({ limits: { check_probes_max: 0 } }));
  await expect(startAgent({ args: ['--config-file', file] })).rejects.toThrow(/limits\.check_probes_max/);
});
