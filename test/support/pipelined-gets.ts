/**
 * Many GETs, fast: over `connections` raw HTTP/1.1 connections, `depth` pipelined at a time on each, each
 * batch sent once the last one is answered. For tests that need the agent to log a lot quickly.
 */
import net from 'node:net';

export interface PipelinedGets {
  /** The path of the `i`th request of connection `c`. */
  path: (c: number, i: number) => string;
  count: number;
  /** Extra header lines (`Name: value`). */
  headers?: string[];
  /** @default 8 */
  connections?: number;
  /** @default 25 */
  depth?: number;
  /** No answer for this long fails the run. @default 20_000 */
  idleMs?: number;
}

/** Resolves with how many answers came with each status. */
export async function pipelinedGets(base: string, o: PipelinedGets): Promise<Record<number, number>> {
  const { port } = new URL(base);
  const connections = o.connections ?? 8;
  const depth = o.depth ?? 25;
  const perConnection = Math.ceil(o.count / connections);
  const head = ['Host: 127.0.0.1', ...(o.headers ?? [])].join('\r\n');
  const statuses: Record<number, number> = {};
  const one = (c: number) => new Promise<void>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let sent = 0;
    let answers = 0;
    const send = () => {
      const n = Math.min(depth, perConnection - sent);
      socket.write(Array.from({ length: n }, (_, k) => `GET ${o.path(c, sent + k)} HTTP/1.1\r\n${head}\r\n\r\n`).join(''));
      sent += n;
    };
    socket.once('connect', send);
    socket.setTimeout(o.idleMs ?? 20_000, () => socket.destroy(new Error(`no answer for ${o.idleMs ?? 20_000} ms`)));
    // A status line split between two reads is found in the tail kept from the first.
    let tail = '';
    socket.on('data', (d: Buffer) => {
      const text = tail + d.toString('latin1');
      let end = 0;
      for (const m of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) {
        statuses[Number(m[1])] = (statuses[Number(m[1])] ?? 0) + 1;
        answers++;
        end = m.index + m[0].length;
      }
      tail = text.slice(Math.max(end, text.length - 13));
      if (answers >= perConnection) {
        socket.destroy();
        resolve();
      } else if (answers === sent) {
        send();
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection ${c} closed after ${answers} of ${perConnection} answers: ${JSON.stringify(statuses)}`)));
  });
  await Promise.all(Array.from({ length: connections }, (_, c) => one(c)));
  return statuses;
}
