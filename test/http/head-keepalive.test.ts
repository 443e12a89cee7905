// Goal: an answer to HEAD ends its response, so the connection stays usable. A started agent answers HEAD
// with the GET's headers and Content-Length and no body, and a request sent after it on the same keep-alive
// connection — in a later packet or in the same one — is answered in order, the connection left open.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
const value = 'v'.repeat(1000);

beforeAll(async () => {
  agent = await startAgent();
  expect((await client(agent).put('/v1/kv/head/k', value)).status).toBe(200);
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

interface Answer { status: number; headers: Map<string, string>; body: Buffer }

/** One keep-alive connection, read as answers arrive; `head` answers have no body whatever their length says. */
class Connection {
  private data = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  closed = false;
  private readonly socket: Socket;

  constructor(url: string) {
    const { port, hostname } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.on('data', (d: Buffer) => { this.data = Buffer.concat([this.data, d]); this.waiting?.(); });
    this.socket.on('close', () => { this.closed = true; this.waiting?.(); });
    this.socket.on('error', () => {});
  }

  send(bytes: string): void {
    this.socket.write(bytes);
  }

  /** The next answer (a HEAD's when `head`), or undefined when the connection closes first. */
  async next(head: boolean): Promise<Answer | undefined> {
    for (;;) {
      const answer = this.take(head);
      if (answer !== undefined) return answer;
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => { this.waiting = resolve; });
    }
  }

  /** Bytes received and not yet taken as an answer. */
  get pending(): number {
    return this.data.length;
  }

  private take(head: boolean): Answer | undefined {
    const headEnd = this.data.indexOf('\r\n\r\n');
    if (headEnd < 0) return undefined;
    const lines = this.data.subarray(0, headEnd).toString('latin1').split('\r\n');
    const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const));
    const length = head ? 0 : Number(headers.get('content-length') ?? 0);
    if (this.data.length < headEnd + 4 + length) return undefined;
    const body = this.data.subarray(headEnd + 4, headEnd + 4 + length);
    this.data = this.data.subarray(headEnd + 4 + length);
    return { status: Number(lines[0]!.split(' ')[1]), headers, body };
  }

  end(): void {
    this.socket.destroy();
  }
}

const request = (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`;

test('HEAD answers with the GET\'s Content-Length and no body', async () => {
  const get = await client(agent).get('/v1/kv/head/k');
  const c = new Connection(agent.url);
  c.send(request('HEAD', '/v1/kv/head/k'));
  const head = await c.next(true);
  expect(head?.status).toBe(200);
  expect(head?.headers.get('content-length')).toBe(String(Buffer.byteLength(get.text)));
  // The next bytes on the connection are the next answer's: nothing of a body came after the HEAD's head.
  c.send(request('GET', '/v1/status/leader'));
  const after = await c.next(false);
  expect(after?.status).toBe(200);
  expect(c.pending).toBe(0);
  c.end();
});

test('a request sent after a HEAD answer on the same connection is answered, and the connection stays open', async () => {
  const c = new Connection(agent.url);
  for (let i = 0; i < 3; i++) {
    c.send(request('HEAD', '/v1/status/leader'));
    expect((await c.next(true))?.status).toBe(200);
    c.send(request('GET', '/v1/kv/head/k'));
    const get = await c.next(false);
    expect(get?.status).toBe(200);
    expect(JSON.parse(get!.body.toString())[0].Key).toBe('head/k');
  }
  expect(c.closed).toBe(false);
  c.end();
});

test('HEAD and GET in one packet get both answers, in order', async () => {
  const c = new Connection(agent.url);
  c.send(request('HEAD', '/v1/kv/head/k') + request('GET', '/v1/kv/head/k') + request('HEAD', '/v1/status/leader'));
  const head = await c.next(true);
  const get = await c.next(false);
  const last = await c.next(true);
  expect([head?.status, get?.status, last?.status]).toEqual([200, 200, 200]);
  expect(head?.headers.get('content-length')).toBe(String(get!.body.length));
  expect(c.closed).toBe(false);
  c.end();
});
