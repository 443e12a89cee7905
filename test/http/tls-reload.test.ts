// Goal: an HTTPS agent's certificate and key are read again by a reload (SIGHUP, PUT /v1/agent/reload), as
// Consul's agent does: new connections get the new certificate, connections already open (a keep-alive
// HTTP connection, a WebSocket stream) go on with theirs, a reload whose files do not make a certificate
// and key fails naming the file and changes nothing, and the agent still stops cleanly. (At start, such
// files are refused with the same words: startup.test.ts.)
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { startAgent } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import { subprotocol } from '../support/stream.ts';

const fixtures = join(import.meta.dirname, '../probes/fixtures');
const pem = (name: string) => readFileSync(join(fixtures, name));
const ca = [pem('localhost-cert.pem'), pem('localhost-cert-2.pem')];

/** A TLS connection to the agent that sends HTTP/1.1 requests one after another on the same socket. */
class KeepAlive {
  private buffered = '';
  private constructor(readonly socket: tls.TLSSocket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => { this.buffered += d; });
  }

  static async open(port: number): Promise<KeepAlive> {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    await new Promise<void>((res, rej) => { socket.once('secureConnect', res); socket.once('error', rej); });
    return new KeepAlive(socket);
  }

  /** The certificate's common name. */
  get cn(): string {
    return String(this.socket.getPeerCertificate().subject.CN);
  }

  /** GET path; the answer's status and body (the body's length from Content-Length). */
  async get(path: string): Promise<{ status: number; body: string }> {
    this.buffered = '';
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    const deadline = Date.now() + 5_000;
    for (;;) {
      const end = this.buffered.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(this.buffered)?.[1];
      if (end >= 0 && length !== undefined && this.buffered.length >= end + 4 + Number(length)) {
        return { status: Number(this.buffered.slice(9, 12)), body: this.buffered.slice(end + 4, end + 4 + Number(length)) };
      }
      if (Date.now() > deadline || this.socket.destroyed) throw new Error(`no answer to ${path}: ${this.buffered}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

async function cnOfNewConnection(port: number): Promise<string> {
  const c = await KeepAlive.open(port);
  const cn = c.cn;
  c.socket.destroy();
  return cn;
}

describe('HTTPS certificate reload', () => {
  const h = useConfigAgent('roster-tls-reload-', {});
  const cert = () => join(h.dir, 'cert.pem');
  const key = () => join(h.dir, 'key.pem');
  const port = () => Number(new URL(h.agent.url).port);
  const put = async (path: string, body = '') => {
    const c = await KeepAlive.open(port());
    try {
      c.socket.write(`PUT ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const answer = (c as unknown as { buffered: string }).buffered;
        const end = answer.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(answer)?.[1];
        if (end >= 0 && length !== undefined && answer.length >= end + 4 + Number(length)) {
          return { status: Number(answer.slice(9, 12)), body: answer.slice(end + 4, end + 4 + Number(length)) };
        }
        if (Date.now() > deadline) throw new Error(`no answer to PUT ${path}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      c.socket.destroy();
    }
  };

  test('new connections get the new certificate, open ones go on, bad files change nothing', async () => {
    // The suite's agent runs on plain HTTP; this test starts its own HTTPS agent on a config file.
    copyFileSync(join(fixtures, 'localhost-cert.pem'), cert());
    copyFileSync(join(fixtures, 'localhost-key.pem'), key());
    h.write({ cert_file: cert(), key_file: key() });
    await h.agent.stop();
    h.agent = await startAgent({ args: ['--config-file', h.file] });
    expect(h.agent.url).toMatch(/^https:/);

    const kept = await KeepAlive.open(port());
    expect(kept.cn).toBe('localhost');
    expect((await kept.get('/v1/status/leader')).status).toBe(200);
    const ws = new WebSocket(`${h.agent.url.replace(/^https/, 'wss')}/v1/stream`, [subprotocol], { ca });
    const messages: { id?: string; type?: string; key?: string }[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('error', rej); });
    ws.send(JSON.stringify({ op: 'subscribe', id: 'kv', topic: 'kv_prefix', key: 'rotated/' }));
    await expect.poll(() => messages.some((m) => m.id === 'kv' && m.type === 'end_of_snapshot')).toBe(true);

    // The files rewritten in place, as a certificate manager renews them.
    copyFileSync(join(fixtures, 'localhost-cert-2.pem'), cert());
    copyFileSync(join(fixtures, 'localhost-key-2.pem'), key());
    expect(await put('/v1/agent/reload')).toEqual({ status: 200, body: '' });
    expect(await cnOfNewConnection(port())).toBe('localhost-2');
    expect(h.agent.output()).toMatch(/HTTPS certificate changed/);

    // The connections opened before go on, on the old certificate.
    expect(kept.cn).toBe('localhost');
    const again = await kept.get('/v1/status/leader');
    expect(again.status).toBe(200);
    expect((await put('/v1/kv/rotated/a', 'x')).status).toBe(200);
    await expect.poll(() => messages.some((m) => m.id === 'kv' && m.type === 'event')).toBe(true);

    // A key that is not the certificate's: the reload fails naming it, the second certificate stays.
    copyFileSync(join(fixtures, 'localhost-key.pem'), key());
    const refused = await put('/v1/agent/reload');
    expect(refused.status).toBe(500);
    expect(JSON.parse(refused.body).message).toBe(`reload failed: the config file's key_file (for --tls-key): the key in ${key()} does not belong to the certificate in ${cert()}`);
    writeFileSync(cert(), 'not a certificate\n');
    expect(JSON.parse((await put('/v1/agent/reload')).body).message).toBe(`reload failed: the config file's cert_file (for --tls-cert): ${cert()} holds no PEM certificate`);
    expect(await cnOfNewConnection(port())).toBe('localhost-2');

    // Back to the first certificate: a second change works as the first did.
    copyFileSync(join(fixtures, 'localhost-cert.pem'), cert());
    expect((await put('/v1/agent/reload')).status).toBe(200);
    expect(await cnOfNewConnection(port())).toBe('localhost');
    expect((await kept.get('/v1/status/leader')).status).toBe(200);

    // Stopping ends the connections of every certificate's listener.
    const closed = new Promise<number>((res) => ws.once('close', (code) => res(code)));
    const ended = new Promise<void>((res) => kept.socket.once('close', () => res()));
    expect(await h.agent.stop()).toBe(0);
    await closed;
    await ended;
  }, 60_000);
});
