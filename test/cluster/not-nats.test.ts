// Goal: a node whose --nats names something that is not a nats-server (an HTTP port, the usual slip) is
// told so, with the address: opening the log fails with "<url> did not answer as a NATS server", not with
// nats.js's "node provided an undefined error". Two stand-ins: one that closes the connection at once (as
// an HTTP server that times out the silent client does), one that answers with an HTTP status line.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { JetStreamLog } from '../../cluster/index.ts';
import { SystemClock } from '../../src/ports/clock.ts';

const servers: Server[] = [];
afterAll(async () => { for (const s of servers) await new Promise((r) => s.close(r)); });

async function standIn(onConnection: (s: Socket) => void): Promise<string> {
  const server = createServer((s) => { s.on('error', () => {}); onConnection(s); });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `nats://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function openError(url: string): Promise<string> {
  const log = new JetStreamLog({ servers: [url], stream: 'NOTNATS', replicas: 1, nodeName: 'a', clock: new SystemClock(), openTimeoutMs: 1_500 });
  try {
    await log.open();
    return 'opened';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await log.close().catch(() => undefined);
  }
}

describe.concurrent('--nats naming something that is not a nats-server', () => {
  test('a server that closes the connection at once', async () => {
    const url = await standIn((s) => s.destroy());
    expect(await openError(url)).toMatch(new RegExp(`^JetStreamLog.open: connecting to the nats-servers ${url}: ${url} did not answer as a NATS server \\(.*\\): check that --nats names the nats-servers' client port`));
  }, 15_000);

  test('an HTTP server answering its status line', async () => {
    const url = await standIn((s) => s.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n'));
    expect(await openError(url)).toMatch(new RegExp(`^JetStreamLog.open: connecting to the nats-servers ${url}: ${url} did not answer as a NATS server \\(unexpected response from server\\)`));
  }, 15_000);
});
