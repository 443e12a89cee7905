// Goal: a write the agent is slow to confirm ends with the agent's own answer, not the command's. The agent
// answers a write it could not commit within write_timeout (30 s by default) with 503, outcome unknown;
// `roster` waits 40 s for an answer, so it prints that 503. A write still unanswered at 40 s is given up
// with a message that says it may still take effect. An address that accepts the request and answers
// late stands in for an agent whose log is unreachable.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { roster } from './support.ts';

const outcomeUnknown = 'the write was not confirmed within 30000 ms (write_timeout): it may still take effect; read it back before retrying';

/** An HTTP server that answers every request after `afterMs` with 503 outcome unknown, or never (undefined). */
async function lateAgent(afterMs: number | undefined): Promise<{ addr: string; close(): Promise<void> }> {
  const pending: ServerResponse[] = [];
  const timers: NodeJS.Timeout[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    pending.push(res);
    if (afterMs === undefined) return;
    timers.push(setTimeout(() => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 1016, message: outcomeUnknown }));
    }, afterMs));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    addr,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      for (const res of pending) res.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe.concurrent('a write the agent is slow to confirm', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => { for (const s of servers) await s.close(); });

  test('answered 503 outcome unknown after 32 s: the agent\'s message is printed, exit 1', async () => {
    const agent = await lateAgent(32_000);
    servers.push(agent);
    const r = await roster(['kv', 'put', 'k', 'v', '--http-addr', agent.addr], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe(`roster: ${outcomeUnknown}\n`);
  }, 70_000);

  test('never answered: given up after 40 s, saying the write may still take effect', async () => {
    const agent = await lateAgent(undefined);
    servers.push(agent);
    const r = await roster(['kv', 'put', 'k', 'v', '--http-addr', agent.addr], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe(`roster: the agent at http://${agent.addr} did not answer within 40s; the write may still take effect: read it back before retrying\n`);
  }, 70_000);
});
