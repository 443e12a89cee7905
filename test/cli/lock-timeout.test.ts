// Goal: `roster lock --timeout` bounds the whole acquisition, the session create included. Through a proxy
// in front of a started agent that holds back the answer to the session create, `--timeout 2s` ends in
// about 2 s with the timed-out lock's message and exit 1, runs nothing, and a session the agent made
// (its answer late) is destroyed, not left to lapse after its TTL.
import { existsSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { roster, startRoster, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-lock-timeout-');

/** What the proxy does with a session create: never answers it (nothing reaches the agent), or answers late. */
let createMode: 'mute' | { lateMs: number } = 'mute';
let proxy: Server;
let proxyAddr: string;
const held: ServerResponse[] = [];

/** Forwards one request to the agent; `answer` gets the agent's answer with its body read. */
function forward(req: IncomingMessage, answer: (status: number, headers: IncomingMessage['headers'], body: Buffer) => void): void {
  const target = new URL(cli.agent.url);
  const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => answer(res.statusCode ?? 502, res.headers, Buffer.concat(chunks)));
  });
  req.pipe(out);
}

beforeAll(async () => {
  proxy = createServer((req, res) => {
    const send = (status: number, headers: IncomingMessage['headers'], body: Buffer) => { res.writeHead(status, headers).end(body); };
    if (req.method === 'PUT' && req.url?.startsWith('/v1/session/create')) {
      const mode = createMode;
      if (mode === 'mute') { held.push(res); req.resume(); return; }
      forward(req, (status, headers, body) => setTimeout(() => send(status, headers, body), mode.lateMs));
      return;
    }
    forward(req, send);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyAddr = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const res of held) res.destroy();
  proxy.closeAllConnections();
  await new Promise((r) => proxy.close(r));
});

const sessionsNamed = async (name: string) => (await cli.http.get('/v1/session/list')).json<{ ID: string; Name: string }[]>().filter((s) => s.Name === name);

describe('--timeout bounds the session create', () => {
  test('an agent that never answers the create: the timed-out lock\'s message within the bound, exit 1, nothing run', async () => {
    createMode = 'mute';
    const run = startRoster(['lock', '--verbose', '--timeout', '2s', '--http-addr', proxyAddr, 'mute', '--', `touch ${cli.file('mute-ran')}`], { timeoutMs: 15_000 });
    // Counted from the command's first step, its own start-up left out.
    await run.waitFor(/Setting up lock at path: mute\/\.lock/);
    const started = Date.now();
    const r = await run.exited;
    const tookMs = Date.now() - started;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe('Setting up lock at path: mute/.lock\nroster: did not acquire lock "mute/.lock" within 2s\n');
    // 2 s, then at most 2 s more for a late answer to the create.
    expect(tookMs).toBeGreaterThanOrEqual(1_900);
    expect(tookMs).toBeLessThan(5_000);
    expect(existsSync(cli.file('mute-ran'))).toBe(false);
  }, 20_000);

  test('a create answered after the timeout: the session it made is destroyed; nothing run', async () => {
    createMode = { lateMs: 2_600 };
    const r = await roster(['lock', '--timeout', '2s', '--http-addr', proxyAddr, 'late', '--', `touch ${cli.file('late-ran')}`], { timeoutMs: 15_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe('roster: did not acquire lock "late/.lock" within 2s\n');
    expect(existsSync(cli.file('late-ran'))).toBe(false);
    expect(await sessionsNamed('roster lock late/.lock')).toEqual([]);
    expect((await cli.http.get('/v1/kv/late/.lock')).status).toBe(404);
  }, 20_000);

  test('a slow create within the timeout leaves the rest of it for the wait: a held lock times out at 2s, not 2s after the create', async () => {
    const holder = await cli.http.session({ Name: 'slow-holder' });
    expect((await cli.http.put(`/v1/kv/slow/.lock?acquire=${holder}`)).text).toBe('true');
    createMode = { lateMs: 1_800 };
    const run = startRoster(['lock', '--verbose', '--timeout', '2s', '--http-addr', proxyAddr, 'slow', '--', `touch ${cli.file('slow-ran')}`], { timeoutMs: 15_000 });
    // Counted from the command's first step, its own start-up left out.
    await run.waitFor(/Setting up lock at path: slow\/\.lock/);
    const started = Date.now();
    const r = await run.exited;
    const tookMs = Date.now() - started;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/roster: did not acquire lock "slow\/\.lock" within 2s\n$/);
    expect(tookMs).toBeLessThan(3_000);
    expect(existsSync(cli.file('slow-ran'))).toBe(false);
    expect(await sessionsNamed('roster lock slow/.lock')).toEqual([]);
  }, 20_000);
});
