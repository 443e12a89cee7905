// Goal: `Expect: 100-continue` with a declared body over the limit, through a started agent. uWebSockets.js
// answers `100 Continue` by itself before the agent's handler runs (it cannot be told not to); the agent's
// 413 follows at once, with Connection: close, before the client has sent a byte of the body, so a client
// that reads the final status after the 100 need not upload anything (docs/reference.md, Locks and KV).
import net from 'node:net';
import { expect, test } from 'vitest';
import { withAgent } from '../support/agent.ts';

let port = 0;
withAgent((a) => { port = Number(new URL(a.url).port); });

/** What the agent writes to a request head sent alone (no body byte follows it): up to a JSON body's end, or within `ms`. */
function answerToHead(head: string, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = net.connect(port, '127.0.0.1', () => s.write(head));
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.endsWith('}')) done();
    });
    const done = () => { s.destroy(); resolve(got); };
    s.on('close', done);
    s.on('error', done);
    setTimeout(done, ms);
  });
}

test('a body declared over the limit: uWS\'s 100 Continue, then the 413 at once, without the upload', async () => {
  const head = 'PUT /v1/kv/too-big HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\nContent-Length: 10000000\r\nExpect: 100-continue\r\n\r\n';
  const got = await answerToHead(head, 2000);
  expect(got.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Payload Too Large\r\n'), got.slice(0, 200)).toBe(true);
  expect(got).toMatch(/\r\nConnection: close\r\n/i);
  expect(got).toContain('"code":1011');
});
