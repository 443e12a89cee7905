// Goal: a cluster agent's HTTP server answers before the agent has joined its cluster (gossip takes about
// two seconds to start), and reload, force-leave and leave work from its first answer: reload answers 200,
// force-leave of an unknown name its 404, and a leave asked then is answered 200 and stops the agent with
// exit code 0 once it is up. They answered 500 "internal error" until the agent had joined.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';

let nats: NatsCluster;
const dataDirs: string[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
}, 60_000);

afterAll(async () => {
  await nats?.shutdown();
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
});

/** Starts a cluster node on a port chosen here, and resolves with its base URL as soon as its HTTP server answers (before it says it is ready). */
async function startEarly(name: string): Promise<{ base: string; started: Promise<Agent> }> {
  const dataDir = tempDataDir();
  dataDirs.push(dataDir);
  const httpPort = await freePort();
  const gossipPort = await freePort();
  const started = startAgent({
    bare: true, dataDir, readyTimeoutMs: 60_000,
    args: ['--http-port', String(httpPort), '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name,
      '--nats', nats.urls.join(','), '--replicas', '1', '--gossip-listen', `127.0.0.1:${gossipPort}`, '--join', `127.0.0.1:${gossipPort}`],
  });
  started.catch(() => undefined);
  const base = `http://127.0.0.1:${httpPort}`;
  await until(`${name}'s HTTP server answering`, async () => ((await call(base, 'GET', '/v1/status/leader')).status === 200 ? true : undefined), 60_000);
  return { base, started };
}

describe('agent operations from the HTTP server\'s first answer', () => {
  test('reload answers 200 and force-leave of an unknown name 404', async () => {
    const { base, started } = await startEarly('early1');
    const [reload, forceLeave] = await Promise.all([call(base, 'PUT', '/v1/agent/reload'), call(base, 'PUT', '/v1/agent/force-leave/nobody')]);
    const agent = await started;
    try {
      expect({ status: reload.status, text: reload.text }).toEqual({ status: 200, text: '' });
      expect(forceLeave.status).toBe(404);
      expect(forceLeave.json().message).toMatch(/no member named "nobody"/);
    } finally {
      await agent.stop();
    }
  }, 90_000);

  test('a leave asked at once is answered 200 and stops the agent with exit code 0 once it is up', async () => {
    const { base, started } = await startEarly('early2');
    const r = await call(base, 'PUT', '/v1/agent/leave');
    const agent = await started;
    try {
      expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: '' });
      const code = await until('the agent exited by itself', async () => agent.proc.exitCode ?? undefined, 20_000);
      expect(code).toBe(0);
      expect(agent.output()).toMatch(/"signal":"leave"/);
    } finally {
      await agent.stop();
    }
  }, 90_000);
});
