/**
 * A TCP proxy on 127.0.0.1 whose link can be cut, as a network partition cuts it: while cut, nothing is
 * forwarded either way on the connections it holds, and connections made meanwhile are taken and left
 * unanswered (their sockets stay open, nothing arrives). Healed, every held connection flows again, with
 * nothing lost. Tests put it between one node and its nats-server to cut that node off from NATS alone,
 * without network namespaces or root.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface CuttableProxy {
  /** The port it listens on. */
  port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function cuttableProxy(targetPort: number): Promise<CuttableProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let isCut = false;
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('data', (d) => to.write(d));
      from.on('end', () => to.end());
      from.on('error', () => to.destroy());
      from.on('close', () => { to.destroy(); pairs.delete(pair); });
    }
    if (isCut) pause(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    cut: () => {
      isCut = true;
      for (const pair of pairs) pause(pair);
    },
    heal: () => {
      isCut = false;
      for (const [a, b] of pairs) { a.resume(); b.resume(); }
    },
    close: async () => {
      for (const [a, b] of pairs) { a.destroy(); b.destroy(); }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function pause([a, b]: [Socket, Socket]): void {
  a.pause();
  b.pause();
}
