// Goal: the HTTP probe's status, Consul output text, request shape (method, headers, Host, body, no keep-alive), redirects, body tail, TLS and transport errors against a real loopback server.
import http from 'node:http';
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { httpProbe, validateHttpUrl } from '../../src/probes/index.ts';
import { closedPort, listen, tls } from './servers.ts';

const bigBody = 'a'.repeat(1000) + 'b'.repeat(3000) + 'c'.repeat(2000);

function routes(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const path = req.url ?? '/';
    if (path === '/ok') return void res.end('fine');
    if (path === '/busy') return void res.writeHead(429).end('slow down');
    if (path === '/fail') return void res.writeHead(500).end('boom');
    if (path === '/custom-reason') return void res.writeHead(503, 'Going Away').end();
    if (path === '/hang') return; // never answers
    if (path === '/slow-body') return void res.writeHead(200).write('partial'); // headers and a first chunk, then nothing
    if (path === '/big') return void res.end(bigBody);
    if (path === '/redirect') return void res.writeHead(302, { Location: '/ok' }).end();
    if (path === '/redirect-absolute') return void res.writeHead(302, { Location: `http://127.0.0.1:${port}/echo` }).end();
    if (path === '/see-other') return void res.writeHead(303, { Location: '/echo' }).end();
    if (path === '/temporary') return void res.writeHead(307, { Location: '/echo' }).end();
    if (path === '/relative-echo') return void res.writeHead(302, { Location: '/echo' }).end();
    if (path.startsWith('/loop')) return void res.writeHead(302, { Location: `/loop${Number(path.slice(5) || 0) + 1}` }).end();
    if (path === '/echo') {
      const echo = { method: req.method, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() };
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(echo));
    }
    res.writeHead(404).end('no route');
  });
}

let port = 0;
let base = '';
let tlsPort = 0;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const plain = await listen(http.createServer(routes));
  port = plain.port;
  base = `http://127.0.0.1:${port}`;
  const secure = await listen(https.createServer(tls, routes));
  tlsPort = secure.port;
  closers.push(plain.close, secure.close);
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

interface Echo {
  method: string;
  headers: Record<string, string>;
  rawHeaders: string[];
  body: string;
}
const echoOf = (output: string): Echo => JSON.parse(output.slice(output.indexOf(' Output: ') + ' Output: '.length)) as Echo;

describe('status from the answer (2xx passing, 429 warning, other critical)', () => {
  test('200 → passing with the status line and body', async () => {
    expect(await httpProbe({ url: `${base}/ok` })()).toEqual({ status: 'passing', output: `HTTP GET ${base}/ok: 200 OK Output: fine` });
  });
  test('429 → warning', async () => {
    expect(await httpProbe({ url: `${base}/busy` })()).toEqual({ status: 'warning', output: `HTTP GET ${base}/busy: 429 Too Many Requests Output: slow down` });
  });
  test('500 → critical', async () => {
    expect(await httpProbe({ url: `${base}/fail` })()).toEqual({ status: 'critical', output: `HTTP GET ${base}/fail: 500 Internal Server Error Output: boom` });
  });
  test('the reason phrase is the one the server sent', async () => {
    expect((await httpProbe({ url: `${base}/custom-reason` })()).output).toBe(`HTTP GET ${base}/custom-reason: 503 Going Away Output: `);
  });
});

describe('the request', () => {
  test('GET with Consul headers and no keep-alive by default', async () => {
    const result = await httpProbe({ url: `${base}/echo` })();
    const echo = echoOf(result.output);
    expect(echo.method).toBe('GET');
    expect(echo.headers['user-agent']).toBe('Consul Health Check');
    expect(echo.headers['accept']).toBe('text/plain, text/*, */*');
    expect(echo.headers['connection']).toBe('close');
    expect(echo.headers['host']).toBe(`127.0.0.1:${port}`);
  });
  test('method, header arrays, Host, body and overridden defaults are sent', async () => {
    const result = await httpProbe({
      url: `${base}/echo`,
      method: 'POST',
      header: { Host: ['example.test'], 'X-Multi': ['one', 'two'], 'user-agent': ['mine/1'], Accept: ['application/json'] },
      body: '{"ping":true}',
    })();
    expect(result.status).toBe('passing');
    expect(result.output.startsWith(`HTTP POST ${base}/echo: 200 OK Output: `)).toBe(true);
    const echo = echoOf(result.output);
    expect(echo.method).toBe('POST');
    expect(echo.body).toBe('{"ping":true}');
    expect(echo.headers['host']).toBe('example.test');
    expect(echo.headers['x-multi']).toBe('one, two');
    expect(echo.headers['user-agent']).toBe('mine/1');
    expect(echo.headers['accept']).toBe('application/json');
    expect(echo.rawHeaders.filter((h) => h.toLowerCase() === 'user-agent')).toHaveLength(1);
  });
  test('the output keeps the last 4096 bytes of a longer body, with no prefix', async () => {
    const result = await httpProbe({ url: `${base}/big` })();
    expect(result.output).toBe(`HTTP GET ${base}/big: 200 OK Output: ${bigBody.slice(-4096)}`);
  });
  test('outputBytesMax lowers the kept tail', async () => {
    expect((await httpProbe({ url: `${base}/big`, outputBytesMax: 5 })()).output).toBe(`HTTP GET ${base}/big: 200 OK Output: ccccc`);
  });
});

describe('redirects', () => {
  test('followed by default; the output names the configured URL', async () => {
    expect(await httpProbe({ url: `${base}/redirect` })()).toEqual({ status: 'passing', output: `HTTP GET ${base}/redirect: 200 OK Output: fine` });
  });
  test('disableRedirects reports the 3xx itself as critical', async () => {
    expect(await httpProbe({ url: `${base}/redirect`, disableRedirects: true })()).toEqual({
      status: 'critical',
      output: `HTTP GET ${base}/redirect: 302 Found Output: `,
    });
  });
  test('303 turns a POST into a bodiless GET; 307 repeats method and body', async () => {
    const seeOther = echoOf((await httpProbe({ url: `${base}/see-other`, method: 'POST', body: 'x' })()).output);
    expect([seeOther.method, seeOther.body]).toEqual(['GET', '']);
    const temporary = echoOf((await httpProbe({ url: `${base}/temporary`, method: 'PUT', body: 'kept' })()).output);
    expect([temporary.method, temporary.body]).toEqual(['PUT', 'kept']);
  });
  test('a Host override survives a relative redirect, not an absolute one', async () => {
    const header = { Host: ['example.test'] };
    expect(echoOf((await httpProbe({ url: `${base}/relative-echo`, header })()).output).headers['host']).toBe('example.test');
    expect(echoOf((await httpProbe({ url: `${base}/redirect-absolute`, header })()).output).headers['host']).toBe(`127.0.0.1:${port}`);
  });
  test('the 10th redirect stops the check, Go style', async () => {
    expect(await httpProbe({ url: `${base}/loop` })()).toEqual({ status: 'critical', output: 'Get "/loop10": stopped after 10 redirects' });
  });
});

describe('transport errors as Go error text', () => {
  test('connection refused', async () => {
    const closed = await closedPort();
    const url = `http://127.0.0.1:${closed}/`;
    expect(await httpProbe({ url })()).toEqual({
      status: 'critical',
      output: `Get "${url}": dial tcp 127.0.0.1:${closed}: connect: connection refused`,
    });
  });
  test('a server that never answers hits the timeout', async () => {
    expect(await httpProbe({ url: `${base}/hang`, timeoutMs: 300 })()).toEqual({
      status: 'critical',
      output: `Get "${base}/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
  });
  test('a body cut off by the timeout still reports the status with what arrived, as Go does', async () => {
    expect(await httpProbe({ url: `${base}/slow-body`, timeoutMs: 300 })()).toEqual({
      status: 'passing',
      output: `HTTP GET ${base}/slow-body: 200 OK Output: partial`,
    });
  });
  test('the caller aborting stops the request', async () => {
    const controller = new AbortController();
    const pending = httpProbe({ url: `${base}/hang`, method: 'DELETE' })(controller.signal);
    setTimeout(() => controller.abort(), 100);
    expect(await pending).toEqual({ status: 'critical', output: `Delete "${base}/hang": context canceled` });
  });
  test('only http and https URLs', async () => {
    expect(validateHttpUrl(`${base}/ok`)).toBeUndefined();
    expect(validateHttpUrl('https://example.test/')).toBeUndefined();
    expect(validateHttpUrl('ftp://example.test/')).toBe('unsupported protocol scheme "ftp"');
    expect(validateHttpUrl('example.test/health')).toBe('unsupported protocol scheme ""');
    expect(await httpProbe({ url: 'ftp://example.test/' })()).toEqual({ status: 'critical', output: 'Get "ftp://example.test/": unsupported protocol scheme "ftp"' });
  });
});

describe('TLS', () => {
  test('an unknown authority is refused unless tlsSkipVerify', async () => {
    const url = `https://127.0.0.1:${tlsPort}/ok`;
    expect(await httpProbe({ url })()).toEqual({
      status: 'critical',
      output: `Get "${url}": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
    });
    expect(await httpProbe({ url, tlsSkipVerify: true })()).toEqual({ status: 'passing', output: `HTTP GET ${url}: 200 OK Output: fine` });
  });
});
