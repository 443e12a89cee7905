// Goal: a client that pipelines requests and never reads their answers cannot make the agent hold one
// answer per request. Answers under the large-answer threshold (1 MiB) were handed whole to uWS, which
// buffered every one of them per connection: four connections pipelining GETs of a 700 KB answer took an
// agent past 8 GB of RSS within seconds. A started agent now holds at most the one answer a connection's
// socket did not take, and a request pipelined behind it ends the connection; it keeps answering others.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

/** A 512 KiB value: its GET answer is about 700 KB of JSON (base64), under the 1 MiB large-answer threshold. */
const value = Buffer.alloc(512 * 1024, 7);
/** Pipelined GETs per connection, and connections: handed whole to uWS these would be about 1.4 GB of answers. */
const requestsPerConnection = 500;
const connections = 4;
/** What the agent's RSS may grow by while the attack runs (one held answer per connection, copies, garbage). */
const rssGrowthMaxBytes = 300 * 1024 * 1024;

let agent: Agent;
const sockets: Socket[] = [];

beforeAll(async () => {
  agent = await startAgent();
  expect((await client(agent).put('/v1/kv/bigone', value)).status).toBe(200);
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await agent?.stop();
  agent?.cleanup();
});

/** The agent's resident set, in bytes. */
function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/**
 * Opens a connection that pipelines `count` GETs of the value and never reads; resolves once every request
 * is written or the agent ended the connection.
 */
function pipelineWithoutReading(count: number): Promise<void> {
  const { port, hostname } = new URL(agent.url);
  const s = connect(Number(port), hostname);
  sockets.push(s);
  s.pause();
  const request = 'GET /v1/kv/bigone HTTP/1.1\r\nHost: localhost\r\n\r\n';
  return new Promise((resolve) => {
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    s.on('connect', async () => {
      for (let i = 0; i < count && !s.destroyed; i++) {
        if (!s.write(request)) await new Promise((drained) => { s.once('drain', drained); s.once('close', drained); });
      }
      s.end(resolve);
    });
  });
}

test('pipelined answers a client never reads are not held one per request, and the agent keeps answering', async () => {
  const pid = agent.proc.pid!;
  const c = client(agent);
  expect((await c.get('/v1/kv/bigone')).status).toBe(200);
  const before = rssOf(pid);
  let peak = before;
  let attacking = true;
  const sampled = (async () => {
    while (attacking) {
      peak = Math.max(peak, rssOf(pid));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await Promise.all(Array.from({ length: connections }, () => pipelineWithoutReading(requestsPerConnection)));
  // Every request has reached the agent (or its connection was ended): the agent answers others meanwhile.
  for (let i = 0; i < 5; i++) {
    expect((await c.get('/v1/status/leader')).status).toBe(200);
    peak = Math.max(peak, rssOf(pid));
  }
  attacking = false;
  await sampled;
  const grown = peak - before;
  expect(grown, `RSS grew by ${Math.round(grown / 1048576)} MB while ${connections} connections pipelined ${requestsPerConnection} unread GETs each`).toBeLessThan(rssGrowthMaxBytes);
  // A client that reads still gets the value whole.
  expect(Buffer.from((await c.get('/v1/kv/bigone')).json<{ Value: string }[]>()[0]!.Value, 'base64').equals(value)).toBe(true);
});
