// Goal: a cluster node started before its nats-servers (the boot order of a host that starts both) waits
// for them up to the open timeout, as it waits for a JetStream that is not ready, saying so each try,
// and serves once they are up; with none answering by then it stops naming the URLs it tried, and with a
// nats-server that runs without JetStream it says to turn JetStream on.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { freePort, natsConfigText, natsServerBinary } from '../../cluster/dev/nats-launcher.ts';
import { JetStreamLog } from '../../cluster/index.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import { call, sleep, startAgent } from '../support/agent.ts';

test('a node started 3 s before its nats-server waits for it, then serves', async () => {
  const [client, monitor] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'roster-late-nats-'));
  const conf = join(dir, 'late.conf');
  writeFileSync(conf, natsConfigText({ name: 'late', client, monitor, storeDir: join(dir, 'store') }));
  const starting = startAgent({ args: ['--nats', `nats://127.0.0.1:${client}`, '--replicas', '1'], readyTimeoutMs: 60_000 });
  starting.catch(() => undefined);
  await sleep(3_000);
  const server = spawn(natsServerBinary(), ['-c', conf, '-js'], { stdio: 'ignore' });
  try {
    const agent = await starting;
    try {
      expect(agent.output()).toMatch(new RegExp(`"step":"connecting to the nats-servers nats://127.0.0.1:${client}".*"msg":"JetStream log: setup step failed, retrying"`));
      expect((await call(agent.url, 'PUT', '/v1/kv/after-the-server', 'v')).status).toBe(200);
    } finally {
      await agent.stop();
      agent.cleanup();
    }
  } finally {
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);

test('with no nats-server answering by the open timeout, the open fails naming the URLs it tried', async () => {
  const port = await freePort();
  const log = new JetStreamLog({ servers: [`nats://127.0.0.1:${port}`], stream: 'NOBODY', replicas: 1, nodeName: 'n1', clock: new SystemClock(), openTimeoutMs: 2_000 });
  const failure = await log.open().then(() => 'opened', (err: Error) => err.message);
  expect(failure).toMatch(new RegExp(`^JetStreamLog.open: connecting to the nats-servers nats://127.0.0.1:${port}: `));
}, 30_000);

test('with a nats-server that runs without JetStream, the open fails saying to turn it on', async () => {
  const [client, monitor] = [await freePort(), await freePort()];
  const server = spawn(natsServerBinary(), ['-a', '127.0.0.1', '-p', String(client), '-m', String(monitor)], { stdio: 'ignore' });
  try {
    // The connect waits for the server to listen; JetStream is then asked for until the open timeout.
    const log = new JetStreamLog({ servers: [`nats://127.0.0.1:${client}`], stream: 'NO_JS', replicas: 1, nodeName: 'n1', clock: new SystemClock(), openTimeoutMs: 5_000 });
    const failure = await log.open().then(() => 'opened', (err: Error) => err.message);
    expect(failure).toBe('JetStreamLog.open: JetStream: jetstream is not enabled: run the nats-servers with JetStream on (-js, or a jetstream block in their config)');
  } finally {
    server.kill('SIGKILL');
  }
}, 30_000);
