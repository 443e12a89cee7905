// Goal: the WebSocket stream on /v1/stream (watch.md §4.1, §4.3) with real `ws` clients: the upgrade and
// subprotocol, and every topic's snapshot and live events in exactly the HTTP shape and index.
import { describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { client, startAgent, type Agent } from '../support/in-process.ts';
import { rawExchange } from '../support/raw-http.ts';
import { type Client, subprotocol, ttl, maxFlags, bigFlags, streamUrl, Stream, subscribe, settled, ok, query, registerService, setCheck, kvPut, expectChecksSnapshot , streamSuite } from '../support/stream.ts';

let agent: Agent;
let c: Client;

streamSuite(startAgent, (a) => {
  agent = a;
  c = client(a);
});

describe('upgrade (§4.1)', () => {
  test('registry.stream.v1 is echoed; no subprotocol is accepted too', async () => {
    const s = await Stream.open(agent);
    expect(s.ws.protocol).toBe(subprotocol);
    const bare = await Stream.open(agent, []);
    expect(bare.ws.protocol).toBe('');
    const sub = await subscribe(bare, { id: 'a', topic: 'kv_prefix', key: 'upgrade/' });
    expect(sub.end).toBeDefined();
  });

  test('without authentication, a browser\'s upgrade from a page of another origin is refused 403; the agent\'s own origin is not', async () => {
    /** The upgrade's HTTP status (101 when it opened), sent with `headers`. */
    const upgrade = (headers: Record<string, string>) => new Promise<{ status: number; body: string }>((res, rej) => {
      const ws = new WebSocket(streamUrl(agent), [subprotocol], { headers });
      ws.once('open', () => { ws.close(); res({ status: 101, body: '' }); });
      ws.once('error', rej);
      ws.once('unexpected-response', (req, r) => {
        let body = '';
        r.on('data', (d: Buffer) => { body += d.toString(); });
        r.on('end', () => { req.destroy(); res({ status: r.statusCode ?? 0, body }); });
      });
    });
    const own = new URL(agent.url);
    for (const origin of ['https://evil.example', 'null', `http://${own.hostname}:${Number(own.port) + 1}`, 'file://']) {
      const refused = await upgrade({ Origin: origin });
      expect(refused.status, origin).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ code: expect.any(Number), details: { origin } });
    }
    expect((await upgrade({ Origin: own.origin })).status).toBe(101);
    expect((await upgrade({})).status).toBe(101);
    // Behind a proxy that keeps the address it was asked on in X-Forwarded-Host.
    expect((await upgrade({ Origin: 'https://registry.example', 'X-Forwarded-Host': 'registry.example' })).status).toBe(101);
  });

  test('a client offering only another subprotocol gets HTTP 400', async () => {
    const ws = new WebSocket(streamUrl(agent), ['other.v1']);
    const answer = await new Promise<{ status: number; body: string }>((res, rej) => {
      ws.once('open', () => rej(new Error('upgraded')));
      ws.once('error', rej);
      ws.once('unexpected-response', (req, r) => {
        let body = '';
        r.on('data', (d: Buffer) => { body += d.toString(); });
        r.on('end', () => { req.destroy(); res({ status: r.statusCode ?? 0, body }); });
      });
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ code: expect.any(Number), message: expect.any(String) });
  });

  test.each([['8', 'Sec-WebSocket-Version: 8\r\n'], ['14', 'Sec-WebSocket-Version: 14\r\n'], ['none', '']])(
    'a Sec-WebSocket-Version other than 13 (%s) gets 426 with Sec-WebSocket-Version: 13, nothing upgraded', async (_what, header) => {
      const head = 'GET /v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
        + `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${header}Sec-WebSocket-Protocol: ${subprotocol}\r\n\r\n`;
      const got = await rawExchange(agent.url, head);
      expect(got.timedOut).toBe(false);
      expect(got.answers[0]).toMatchObject({ status: 426, headers: { 'sec-websocket-version': '13' } });
      expect(JSON.parse(got.answers[0]!.body)).toMatchObject({ message: 'invalid Sec-WebSocket-Version: must be 13' });
    });
});

describe('topics: snapshot equals the HTTP query, events carry the index and the HTTP shape (§4.3)', () => {
  test('service_health (and passingOnly) mirrors /v1/health/service/{name}', async () => {
    await registerService(c, 'sh-web', 'sh-web-1');
    await registerService(c, 'sh-web', 'sh-web-2');
    const s = await Stream.open(agent);
    const all = await subscribe(s, { id: 'all', topic: 'service_health', key: 'sh-web' });
    const passing = await subscribe(s, { id: 'p', topic: 'service_health', key: 'sh-web', filter: { passingOnly: true } });
    const http = await query(c, '/v1/health/service/sh-web');
    expect(http.body).toHaveLength(2);
    expect(all.items).toEqual(http.body);
    expect(all.keys).toEqual(http.body.map((e: any) => `${e.Node.Node}/${e.Service.ID}`));
    expect(all.subscribed).toMatchObject({ resumed: false, epoch: expect.any(String) });
    expect(all.end!.index).toBe(all.subscribed.index);
    expect(passing.items).toEqual((await query(c, '/v1/health/service/sh-web?passing')).body);

    const from = s.mark;
    await setCheck(c, 'service:sh-web-1', 'fail', 'down');
    const ev = await s.next(from, (m) => m.id === 'all' && m.type === 'event', 'the service_health event');
    const del = await s.next(from, (m) => m.id === 'p' && m.type === 'event', 'the passingOnly event');
    const after = await query(c, '/v1/health/service/sh-web');
    expect(ev).toEqual({ type: 'event', id: 'all', index: after.index, op: 'upsert', key: 'node1/sh-web-1', value: after.body.find((e: any) => e.Service.ID === 'sh-web-1') });
    expect(ev.value.Checks.find((x: any) => x.CheckID === 'service:sh-web-1')).toMatchObject({ Status: 'critical', Output: 'down' });
    expect(del).toEqual({ type: 'event', id: 'p', index: after.index, op: 'delete', key: 'node1/sh-web-1' });

    const from2 = s.mark;
    await setCheck(c, 'service:sh-web-1', 'pass');
    const back = await s.next(from2, (m) => m.id === 'p' && m.type === 'event', 'the passingOnly upsert');
    const now = await query(c, '/v1/health/service/sh-web?passing');
    expect(back).toEqual({ type: 'event', id: 'p', index: now.index, op: 'upsert', key: 'node1/sh-web-1', value: now.body.find((e: any) => e.Service.ID === 'sh-web-1') });
    expect(await settled(s, from, 'all')).toHaveLength(2); // one event per change, nothing for sh-web-2
  });

  test('a check registered again under another service leaves the first one\'s entry and checks', async () => {
    await registerService(c, 'mv-web', 'mv-a');
    await registerService(c, 'mv-db', 'mv-b');
    const moved = (serviceId: string) => ({ ID: 'mv-moved', Name: 'moved', ServiceID: serviceId, TTL: ttl, Status: 'critical' });
    ok(await c.put('/v1/agent/check/register', moved('mv-a')), 'register mv-moved on mv-a');
    const s = await Stream.open(agent);
    const health = await subscribe(s, { id: 'h', topic: 'service_health', key: 'mv-web' });
    const checks = await subscribe(s, { id: 'c', topic: 'service_checks', key: 'mv-web' });
    expect(health.items[0].Checks.map((x: any) => x.CheckID)).toContain('mv-moved');
    expect(checks.keys).toContain('node1/mv-moved');

    const from = s.mark;
    ok(await c.put('/v1/agent/check/register', moved('mv-b')), 'register mv-moved on mv-b');
    const ev = await s.next(from, (m) => m.id === 'h' && m.type === 'event', 'the mv-web entry without the check');
    const after = await query(c, '/v1/health/service/mv-web');
    expect(after.body[0].Checks.map((x: any) => x.CheckID)).not.toContain('mv-moved');
    expect(ev).toEqual({ type: 'event', id: 'h', index: after.index, op: 'upsert', key: 'node1/mv-a', value: after.body[0] });
    const gone = await s.next(from, (m) => m.id === 'c' && m.type === 'event', 'the check leaving mv-web');
    expect(gone).toMatchObject({ op: 'delete', key: 'node1/mv-moved' });
  });

  test('service_checks mirrors /v1/health/checks/{name}', async () => {
    await registerService(c, 'sc-api', 'sc-api-1');
    const s = await Stream.open(agent);
    await expectChecksSnapshot(s, c, { id: 'sc', topic: 'service_checks', key: 'sc-api' }, '/v1/health/checks/sc-api');

    const from = s.mark;
    await setCheck(c, 'service:sc-api-1', 'warn', 'slow');
    const ev = await s.next(from, (m) => m.id === 'sc' && m.type === 'event', 'the service_checks event');
    const after = await query(c, '/v1/health/checks/sc-api');
    expect(ev).toEqual({ type: 'event', id: 'sc', index: after.index, op: 'upsert', key: 'node1/service:sc-api-1', value: after.body[0] });
    expect(ev.value).toMatchObject({ Status: 'warning', Output: 'slow' });

    const from2 = s.mark;
    ok(await c.put('/v1/agent/service/deregister/sc-api-1'), 'deregister');
    const gone = await s.next(from2, (m) => m.id === 'sc' && m.type === 'event', 'the delete');
    expect(gone).toEqual({ type: 'event', id: 'sc', index: (await query(c, '/v1/health/checks/sc-api')).index, op: 'delete', key: 'node1/service:sc-api-1' });
  });

  test('node_checks mirrors /v1/health/node/{node}', async () => {
    const s = await Stream.open(agent);
    await expectChecksSnapshot(s, c, { id: 'n', topic: 'node_checks', key: 'node1' }, '/v1/health/node/node1');

    const from = s.mark;
    ok(await c.put('/v1/agent/check/register', { Name: 'nc-disk', TTL: ttl, Status: 'passing' }), 'register nc-disk');
    const ev = await s.next(from, (m) => m.id === 'n' && m.type === 'event', 'the node_checks event');
    const after = await query(c, '/v1/health/node/node1');
    expect(ev).toEqual({ type: 'event', id: 'n', index: after.index, op: 'upsert', key: 'node1/nc-disk', value: after.body.find((x: any) => x.CheckID === 'nc-disk') });

    const from2 = s.mark;
    ok(await c.put('/v1/agent/check/deregister/nc-disk'), 'deregister nc-disk');
    const gone = await s.next(from2, (m) => m.id === 'n' && m.type === 'event', 'the delete');
    expect(gone).toEqual({ type: 'event', id: 'n', index: (await query(c, '/v1/health/node/node1')).index, op: 'delete', key: 'node1/nc-disk' });
  });

  test('checks_in_state mirrors /v1/health/state/{state}; a check leaving the state is a delete', async () => {
    await registerService(c, 'cs-svc', 'cs-svc-1');
    const s = await Stream.open(agent);
    const passing = await subscribe(s, { id: 'pass', topic: 'checks_in_state', key: 'passing' });
    const critical = await subscribe(s, { id: 'crit', topic: 'checks_in_state', key: 'critical' });
    const any = await subscribe(s, { id: 'any', topic: 'checks_in_state', key: 'any' });
    expect(passing.items).toEqual((await query(c, '/v1/health/state/passing')).body);
    expect(critical.items).toEqual((await query(c, '/v1/health/state/critical')).body);
    expect(any.items).toEqual((await query(c, '/v1/health/state/any')).body);
    expect(passing.keys).toContain('node1/service:cs-svc-1');

    const from = s.mark;
    await setCheck(c, 'service:cs-svc-1', 'fail');
    const left = await s.next(from, (m) => m.id === 'pass' && m.type === 'event', 'the passing delete');
    const entered = await s.next(from, (m) => m.id === 'crit' && m.type === 'event', 'the critical upsert');
    const changed = await s.next(from, (m) => m.id === 'any' && m.type === 'event', 'the any upsert');
    const crit = await query(c, '/v1/health/state/critical');
    const record = crit.body.find((x: any) => x.CheckID === 'service:cs-svc-1');
    expect(left).toEqual({ type: 'event', id: 'pass', index: crit.index, op: 'delete', key: 'node1/service:cs-svc-1' });
    expect(entered).toEqual({ type: 'event', id: 'crit', index: crit.index, op: 'upsert', key: 'node1/service:cs-svc-1', value: record });
    expect(changed).toEqual({ type: 'event', id: 'any', index: crit.index, op: 'upsert', key: 'node1/service:cs-svc-1', value: record });
  });

  test('kv_prefix mirrors /v1/kv/{prefix}?recurse, Flags digits exact', async () => {
    await kvPut(c, 'kvp/a', 'one', `?flags=${maxFlags}`);
    await kvPut(c, 'kvp/b', 'two');
    await kvPut(c, 'kvpx', 'prefix is a string prefix');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'k', topic: 'kv_prefix', key: 'kvp/' });
    const http = await query(c, '/v1/kv/kvp/?recurse');
    expect(sub.items).toEqual(http.body);
    expect(sub.keys).toEqual(['kvp/a', 'kvp/b']);
    expect(s.raw.find((t) => t.includes('"type":"snapshot"') && t.includes('"kvp/a"'))).toContain(`"Flags":${maxFlags}`);

    const from = s.mark;
    await kvPut(c, 'other/not-in-prefix', 'x');
    await kvPut(c, 'kvp/c', 'three', `?flags=${bigFlags}`);
    const ev = await s.next(from, (m) => m.id === 'k' && m.type === 'event', 'the kv event');
    const after = await query(c, '/v1/kv/kvp/?recurse');
    expect(ev).toEqual({ type: 'event', id: 'k', index: after.index, op: 'upsert', key: 'kvp/c', value: after.body.find((e: any) => e.Key === 'kvp/c') });
    expect(ev.index).toBe((await query(c, '/v1/kv/kvp/c')).index);
    expect(s.raw.find((t) => t.includes('"type":"event"') && t.includes('"kvp/c"'))).toContain(`"Flags":${bigFlags}`);

    const from2 = s.mark;
    ok(await c.del('/v1/kv/kvp/a'), 'delete kvp/a');
    const gone = await s.next(from2, (m) => m.id === 'k' && m.type === 'event', 'the kv delete');
    expect(gone).toEqual({ type: 'event', id: 'k', index: (await query(c, '/v1/kv/kvp/?recurse')).index, op: 'delete', key: 'kvp/a' });
    expect(await settled(s, from, 'k')).toHaveLength(2); // nothing for other/ or for kvpx
  });

  test('sessions sees create (upsert) and destroy (delete) in the /v1/session shape', async () => {
    const s = await Stream.open(agent);
    const all = await subscribe(s, { id: 'all', topic: 'sessions', key: '' });
    const mine = await subscribe(s, { id: 'node', topic: 'sessions', key: 'node1' });
    expect(all.items).toEqual((await query(c, '/v1/session/list')).body);
    expect(mine.items).toEqual((await query(c, '/v1/session/node/node1')).body);

    const from = s.mark;
    const id = await c.session({ Name: 'stream-session' });
    const ev = await s.next(from, (m) => m.id === 'all' && m.type === 'event', 'the session upsert');
    const ev2 = await s.next(from, (m) => m.id === 'node' && m.type === 'event', 'the node session upsert');
    const info = await query(c, `/v1/session/info/${id}`);
    const list = await query(c, '/v1/session/list');
    expect(ev).toEqual({ type: 'event', id: 'all', index: list.index, op: 'upsert', key: id, value: info.body[0] });
    expect(ev2).toMatchObject({ index: list.index, op: 'upsert', key: id, value: info.body[0] });

    const from2 = s.mark;
    ok(await c.put(`/v1/session/destroy/${id}`), 'destroy');
    const gone = await s.next(from2, (m) => m.id === 'all' && m.type === 'event', 'the session delete');
    expect(gone).toEqual({ type: 'event', id: 'all', index: (await query(c, '/v1/session/list')).index, op: 'delete', key: id });
  });
});
