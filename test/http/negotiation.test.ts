// Goal: content negotiation through started agents (http-conventions "Status meanings" 406, RFC 9110
// §12.5.1). The seed dialect refuses an Accept that allows none of an answer's media types with 406 (a JSON
// error body), before a write is applied; no Accept, `*/*`, `application/*` and Accept lists with a wildcard
// keep working, and so do the answers that are not JSON (Prometheus text, `?raw`, `format=text`, the
// dashboard's files) for an Accept that takes them. The consul dialect ignores Accept, as Consul does.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
let seed: Client;
let seedUrl: string;
let consul: Client;

withAgent((a) => { seed = client(a); seedUrl = a.url; });
withAgent((a) => { consul = client(a); }, { args: ['--dialect', 'consul'] });

const accept = (value: string) => ({ accept: value });
const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe.concurrent('Accept (seed)', () => {
  test('an Accept no JSON answer meets is 406 with a JSON error stating the offered type', async () => {
    for (const value of ['application/xml', 'application/json;q=0', 'text/html', 'application/json;q=0, */*;q=0']) {
      const r = await seed.get('/v1/agent/self', accept(value));
      const body = expectError(r, 406, 1019);
      expect(r.headers.get('content-type'), value).toBe('application/json');
      expect(body.details, value).toEqual({ Accept: [`MediaType:${value}`], offered: ['application/json; charset=utf-8'] });
    }
  });

  test('no Accept, */*, application/*, application/json and lists with a wildcard are answered', async () => {
    expect((await seed.get('/v1/agent/self')).status).toBe(200);
    for (const value of ['*/*', 'application/*', 'application/json', 'application/json; charset=utf-8', 'application/xml, application/json;q=0.5', browser, '']) {
      const r = await seed.get('/v1/agent/self', accept(value));
      expect(r.status, `${value}: ${r.text}`).toBe(200);
    }
  });

  test('a write refused for its Accept is not applied; one answering no body is never refused', async () => {
    expectError(await seed.put('/v1/kv/negotiated', 'v', accept('application/xml')), 406, 1019);
    expect((await seed.get('/v1/kv/negotiated')).status).toBe(404);
    const reg = await seed.put('/v1/agent/check/register', { CheckID: 'neg-ttl', Name: 'neg', TTL: '60s' }, accept('application/xml'));
    expect(reg.status, reg.text).toBe(200);
    expect((await seed.put('/v1/agent/check/pass/neg-ttl', undefined, accept('application/xml'))).status).toBe(200);
  });

  test('metrics: the Prometheus text for a scraper\'s Accept, JSON refused to an Accept of text alone', async () => {
    const scraper = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
    for (const value of [scraper, 'text/plain', 'text/plain;version=0.0.4', 'text/*']) {
      const r = await seed.get('/v1/agent/metrics?format=prometheus', accept(value));
      expect(r.status, `${value}: ${r.text.slice(0, 200)}`).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    }
    const json = await seed.get('/v1/agent/metrics', accept('text/plain'));
    expect(expectError(json, 406, 1019).details.offered).toEqual(['application/json; charset=utf-8']);
    expectError(await seed.get('/v1/agent/metrics?format=prometheus', accept('application/json')), 406, 1019);
  });

  test('?raw and format=text answer text/plain to an Accept of text; JSON is refused it', async () => {
    expect((await seed.put('/v1/kv/neg-raw', 'bytes')).text).toBe('true');
    const raw = await seed.get('/v1/kv/neg-raw?raw', accept('text/plain'));
    expect(raw.status, raw.text).toBe(200);
    expect(raw.text).toBe('bytes');
    expectError(await seed.get('/v1/kv/neg-raw', accept('text/plain')), 406, 1019);
    expect((await seed.put('/v1/agent/service/register', { Name: 'negweb', ID: 'negweb-1' })).status).toBe(200);
    // The status says the instance's health (200 passing, 503 critical...), the body the same word as text.
    const health = await seed.get('/v1/agent/health/service/id/negweb-1?format=text', accept('text/plain'));
    expect(health.headers.get('content-type'), health.text).toBe('text/plain');
    expect(['passing', 'warning', 'critical', 'maintenance']).toContain(health.text);
    // This endpoint chooses text for an Accept of text/plain by itself, as Consul's does.
    const chosen = await seed.get('/v1/agent/health/service/id/negweb-1', accept('text/plain'));
    expect(chosen.headers.get('content-type'), chosen.text).toBe('text/plain');
    expect(['passing', 'warning', 'critical', 'maintenance']).toContain(chosen.text);
    expectError(await seed.get('/v1/agent/health/service/id/negweb-1?format=text', accept('application/json')), 406, 1019);
  });

  test('the dashboard: a browser\'s Accept gets the page, a redirect is never refused, the page is to JSON alone', async () => {
    const page = await seed.get('/ui/', accept(browser));
    expect(page.status, page.text.slice(0, 200)).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectError(await seed.get('/ui/', accept('application/json')), 406, 1019);
    for (const path of ['/', '/ui']) {
      const r = await fetch(`${seedUrl}${path}`, { redirect: 'manual', headers: accept('application/xml') });
      expect(r.status, path).toBe(301);
      expect(r.headers.get('location')).toBe('/ui/');
    }
  });
});

describe.concurrent('Accept (consul dialect, as Consul)', () => {
  test('Accept is ignored: JSON whatever it asks for', async () => {
    for (const value of ['application/xml', 'application/json;q=0']) {
      const r = await consul.get('/v1/agent/self', accept(value));
      expect(r.status, value).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json');
    }
    expect((await consul.put('/v1/kv/negotiated', 'v', accept('application/xml'))).text).toBe('true');
  });
});
