/**
 * Raw HTTP/1.1 over a TCP socket: sends bytes exactly as given (malformed heads, pipelined requests) and
 * reads back every answer, so tests see what a client on the wire sees. Every exchange is bounded in time.
 */
import net from 'node:net';

export interface RawAnswer {
  status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  answers: RawAnswer[];
  /** The server closed the connection (before `waitMs` ran out). */
  closed: boolean;
  /** Neither `expect` answers nor a close came within `waitMs`. */
  timedOut: boolean;
}

export interface RawOptions {
  /** Stop once this many answers have arrived. @default 1 */
  expect?: number;
  /** The longest the exchange may take. @default 5000 */
  waitMs?: number;
  /** More bytes, sent `afterMs` after the first (a pipelined request in a later packet). */
  later?: { afterMs: number; bytes: string | Buffer };
}

/** Sends `bytes` to the agent at `url` (http://host:port) and collects the answers. */
export function rawExchange(url: string, bytes: string | Buffer, o: RawOptions = {}): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  const expect = o.expect ?? 1;
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean, timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers: parseAnswers(data, closed), closed, timedOut });
    };
    const timer = setTimeout(() => finish(false, true), o.waitMs ?? 5000);
    socket.on('connect', () => {
      socket.write(bytes);
      const later = o.later;
      if (later !== undefined) setTimeout(() => { if (!settled) socket.write(later.bytes); }, later.afterMs);
    });
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (parseAnswers(data, false).length >= expect) finish(false, false);
    });
    socket.on('end', () => finish(true, false));
    socket.on('close', () => finish(true, false));
    socket.on('error', () => finish(true, false));
  });
}

/** Complete answers in `data`; one without Content-Length runs to the end of the connection (when `closed`). */
export function parseAnswers(data: Buffer, closed: boolean): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let at = 0;
  while (at < data.length) {
    const headEnd = data.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const lines = data.subarray(at, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? NaN);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = headers['content-length'];
    let end: number;
    if (length !== undefined) {
      end = headEnd + 4 + Number(length);
      if (end > data.length) break;
    } else if (closed) {
      end = data.length;
    } else {
      break;
    }
    answers.push({ status, headers, body: data.subarray(headEnd + 4, end).toString('utf8') });
    at = end;
  }
  return answers;
}
