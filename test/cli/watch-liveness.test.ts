// Goal: `roster watch` notices an agent that stops answering. An address that accepts the connection but
// never answers the upgrade is given up after 40 s, as every other command's request is; a stream that
// falls silent (the agent frozen with SIGSTOP: its sockets stay open) is taken as dead after 75 s, past
// the agent's 30 s bookmarks, and reconnected, resuming once the agent answers again.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { startRoster, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-liveness-');

describe.concurrent('an agent that does not answer', () => {
  const sockets: Socket[] = [];
  const server = createServer((s) => { s.on('error', () => {}); sockets.push(s); });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  test('the upgrade unanswered: gives up after 40 s, exit 1', async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const started = Date.now();
    const r = await startRoster(['watch', 'sessions', '--http-addr', addr], { timeoutMs: 60_000 }).exited;
    const seconds = (Date.now() - started) / 1000;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe(`roster: the agent at http://${addr} did not answer within 40s\n`);
    expect(seconds).toBeGreaterThanOrEqual(39);
    expect(seconds).toBeLessThan(55);
  }, 70_000);

  test('a frozen agent: the silent stream is reconnected after 75 s and resumes when it thaws', async () => {
    const watch = startRoster(['watch', 'sessions', '--json'], { agent: cli.agent.url, timeoutMs: 150_000 });
    const pid = cli.agent.proc.pid!;
    try {
      await watch.waitFor(/"end_of_snapshot"/);
      process.kill(pid, 'SIGSTOP');
      const frozen = Date.now();
      await watch.waitFor(/roster: stream closed \(nothing from the agent for 75s\); reconnecting in/, 100_000);
      expect((Date.now() - frozen) / 1000).toBeGreaterThanOrEqual(70);
      process.kill(pid, 'SIGCONT');
      const id = await cli.http.session({ Name: 'after-thaw' });
      await watch.waitFor(new RegExp(`"upsert".*${id}`), 45_000);
    } finally {
      process.kill(pid, 'SIGCONT');
      watch.proc.kill('SIGINT');
    }
    expect((await watch.exited).code).toBe(0);
  }, 160_000);
});
