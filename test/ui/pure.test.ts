// Goal: the dashboard's pure parts, case by case: addresses to pages (router.ts; anything unknown is the
// not-found view), a KV folder's listing and crumbs, a value's text/JSON/base64 views and the way back to
// bytes with its refusals, uint64 flags, the timeline's transitions from successive stream views, what a
// refused API call was (permission denied, a failed condition, or another error) in both dialects, and
// which session TTLs are no TTL.
import { describe, expect, test } from 'vitest';
import { byteSize, crumbs, exactFlags, folderRows, naturalMode, parseFlags, parseValue, showValue, type KvItem } from '../../ui/src/kv-model.ts';
import { hasDotSegment, keyFromAddress, keyToAddress } from '../../ui/src/addresses.ts';
import { explained, failureOf } from '../../ui/src/refusals.ts';
import { parseRoute } from '../../ui/src/router.ts';
import { record, transitions } from '../../ui/src/timeline.ts';
import { sessionTtl, type Check, type KvEntry } from '../../ui/src/model.ts';

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const item = (Key: string, value = 'v', Session?: string): KvItem => ({ Key, Value: b64(value), Flags: '0', LockIndex: Session ? 1 : 0, CreateIndex: 1, ModifyIndex: 1, ...(Session ? { Session } : {}) });

describe('keys and names in addresses', () => {
  test('dot segments are escaped with one more `~`, one to one; other segments read as written', () => {
    const cases: [string, string][] = [
      ['tmp/../secret/db', 'tmp/~../secret/db'], ['a/./b', 'a/~./b'], ['a/~../b', 'a/~~../b'], ['~~.', '~~~.'],
      ['app/config', 'app/config'], ['a/.../b', 'a/.../b'], ['a/.x/~/~x.', 'a/.x/~/~x.'], ['a b/c%d', 'a%20b/c%25d'], ['a//b/', 'a//b/'],
    ];
    for (const [key, address] of cases) {
      expect(keyToAddress(key), key).toBe(address);
      expect(keyFromAddress(address.split('/')), address).toBe(key);
    }
    expect(parseRoute('/ui/kv/tmp/~../secret/db')).toEqual({ page: 'key', key: 'tmp/../secret/db' });
    expect(parseRoute('/ui/kv/tmp/%7E../')).toEqual({ page: 'folder', prefix: 'tmp/../' });
    expect(parseRoute('/ui/locks/a/~../~../services')).toEqual({ page: 'lock', key: 'a/../../services' });
    expect(parseRoute('/ui/services/~..')).toEqual({ page: 'service', name: '..' });
    expect([hasDotSegment('a/../b'), hasDotSegment('./a'), hasDotSegment('a/...'), hasDotSegment('a/~..')]).toEqual([true, true, false, false]);
  });
});

describe('routes', () => {
  test('lists, details, the KV browser, locks, timeline, cluster, log; anything else is not found', () => {
    expect(parseRoute('/ui/')).toEqual({ page: 'list', list: 'services' });
    expect(parseRoute('/ui/nodes')).toEqual({ page: 'list', list: 'nodes' });
    expect(parseRoute('/ui/services/web%20api')).toEqual({ page: 'service', name: 'web api' });
    expect(parseRoute('/ui/sessions/abc')).toEqual({ page: 'session', id: 'abc' });
    expect(parseRoute('/ui/kv/')).toEqual({ page: 'folder', prefix: '' });
    expect(parseRoute('/ui/kv/app/db/')).toEqual({ page: 'folder', prefix: 'app/db/' });
    expect(parseRoute('/ui/kv/app/a%2Fb')).toEqual({ page: 'key', key: 'app/a/b' });
    expect(parseRoute('/ui/locks/app/leader')).toEqual({ page: 'lock', key: 'app/leader' });
    expect(parseRoute('/ui/timeline')).toEqual({ page: 'timeline' });
    expect(parseRoute('/ui/cluster')).toEqual({ page: 'cluster' });
    expect(parseRoute('/ui/log')).toEqual({ page: 'log' });
    expect(parseRoute('/ui/services/')).toEqual({ page: 'list', list: 'services' });
    for (const path of ['/ui/nope', '/ui/checks/x', '/ui/services/a/b', '/ui/locks/', '/ui/kv/%E0%A4%A', '/ui/timeline/x']) {
      expect(parseRoute(path), path).toEqual({ page: 'notfound', path });
    }
  });
});

describe('KV model', () => {
  test('a folder lists sub-folders first, then keys; its own entry is not a row; locks are counted', () => {
    const rows = folderRows([item('app/'), item('app/z'), item('app/db/host'), item('app/db/port', 'p', 's1'), item('apple'), item('app/a')], 'app/');
    expect(rows.map((r) => [r.path, r.folder, r.keys, r.locks])).toEqual([
      ['app/db/', true, 2, 1], ['app/a', false, 1, 0], ['app/z', false, 1, 0],
    ]);
    expect(crumbs('app/db/host')).toEqual([['(root)', ''], ['app', 'app/'], ['db', 'app/db/']]);
    expect(crumbs('app/db/')).toEqual([['(root)', ''], ['app', 'app/'], ['db', 'app/db/']]);
  });

  test('views of a value, the mode it opens in, and the bytes back from each mode', () => {
    expect(showValue(b64('{"a":1}'), 'json')).toBe('{\n  "a": 1\n}');
    expect(showValue(b64('plain'), 'json')).toBeUndefined();
    expect(showValue(b64(new Uint8Array([0xff])), 'text')).toBeUndefined();
    expect(showValue(null, 'text')).toBe('');
    expect([naturalMode(b64('[1]')), naturalMode(b64('12')), naturalMode(b64(new Uint8Array([0xc3])))]).toEqual(['json', 'text', 'base64']);
    expect(Buffer.from(parseValue('héllo', 'text') as Uint8Array).toString()).toBe('héllo');
    expect(parseValue('{"a":', 'json')).toBeInstanceOf(Error);
    expect([...(parseValue('/wD+', 'base64') as Uint8Array)]).toEqual([0xff, 0x00, 0xfe]);
    for (const bad of ['abc!', 'a', '====']) expect(parseValue(bad, 'base64'), bad).toBeInstanceOf(Error);
    expect(['', 'a', 'ab', 'abc', 'db.internal'].map((v) => byteSize(b64(v)))).toEqual([0, 1, 2, 3, 11]);
    expect(byteSize(null)).toBe(0);
  });

  test('flags are uint64 digits, exact past 2^53', () => {
    expect(parseFlags('')).toBe('0');
    expect(parseFlags(' 18446744073709551615 ')).toBe('18446744073709551615');
    for (const bad of ['18446744073709551616', '-1', '1.5', 'x']) expect(parseFlags(bad), bad).toBeInstanceOf(Error);
    expect(exactFlags('[{"LockIndex":0,"Key":"k","Flags":3304740253564472344,"Value":null}]')).toBe('3304740253564472344');
  });
});

describe('timeline', () => {
  const check = (status: string, output = ''): Check => ({ Node: 'n1', CheckID: 'c', Name: 'c', Status: status, Notes: '', Output: output, ServiceID: 'web-1', ServiceName: 'web', Type: 'ttl' });
  const lock = (session: string, lockIndex: number): KvEntry => ({ Key: 'k', Session: session, LockIndex: lockIndex });

  test('the first view is the start; then status changes, hand-offs, acquires and releases; same views add nothing', () => {
    transitions.length = 0;
    const checks = new Map([['n1/c', check('passing')]]);
    record('checks', checks, 1000);
    expect(transitions).toEqual([]);
    checks.set('n1/c', check('critical', 'refused'));
    record('checks', checks, 2000);
    record('checks', checks, 2500);
    record('locks', new Map(), 3000);
    record('locks', new Map([['k', lock('a', 1)]]), 4000);
    record('locks', new Map([['k', lock('b', 2)]]), 5000);
    record('locks', new Map(), 6000);
    checks.delete('n1/c');
    record('checks', checks, 7000);
    expect(transitions.map((t) => [t.at, t.kind, t.from, t.to, t.detail])).toEqual([
      [2000, 'health', 'passing', 'critical', 'refused'],
      [4000, 'lock', 'free', 'held by a', 'LockIndex 1'],
      [5000, 'lock', 'held by a', 'handed to b', 'LockIndex 2'],
      [6000, 'lock', 'held by b', 'released', 'LockIndex 2'],
      [7000, 'health', 'critical', 'deregistered', ''],
    ]);
    // Older than 15 minutes: dropped when the next one comes.
    checks.set('n1/c', check('passing'));
    record('checks', checks, 7000 + 15 * 60_000 + 1);
    expect(transitions.map((t) => [t.from, t.to])).toEqual([['registered', 'passing']]);
  });
});

describe('refusals', () => {
  const seedTxn = (what: string) => JSON.stringify({ code: 1025, message: 'transaction not applied: 1 operation failed', details: { errors: [{ opIndex: 0, what }] } });
  const consulTxn = (what: string) => JSON.stringify({ Results: null, Errors: [{ OpIndex: 0, What: what }] });

  test('permission denied, a failed condition or another error, from either dialect\'s answer', () => {
    const cases: [number, string, string, string][] = [
      [409, seedTxn('Permission denied'), 'denied', '409: transaction not applied: 1 operation failed (code 1025): Permission denied'],
      [409, consulTxn('Permission denied'), 'denied', '409: transaction not applied: Permission denied'],
      [409, seedTxn('failed to set key "a/../b", index is stale'), 'conflict', '409: transaction not applied: 1 operation failed (code 1025): failed to set key "a/../b", index is stale'],
      [409, consulTxn('failed to delete key "a/../b", index is stale'), 'conflict', '409: transaction not applied: failed to delete key "a/../b", index is stale'],
      [409, consulTxn('key "a/../b" doesn\'t exist'), 'other', '409: transaction not applied: key "a/../b" doesn\'t exist'],
      [403, JSON.stringify({ code: 1004, message: 'permission denied: key write on "k"' }), 'denied', '403: permission denied: key write on "k" (code 1004)'],
      [403, 'Permission denied', 'denied', '403: Permission denied'],
      [401, JSON.stringify({ code: 1002, message: 'missing credentials' }), 'denied', '401: missing credentials (code 1002)'],
      [409, JSON.stringify({ code: 1025, message: 'did not apply: the check-and-set index did not match' }), 'conflict', '409: did not apply: the check-and-set index did not match (code 1025)'],
      [413, 'Request body too large\n', 'other', '413: Request body too large'],
    ];
    for (const [status, body, refusal, message] of cases) {
      const err = failureOf(status, body);
      expect([err.refusal, err.message], body).toEqual([refusal, message]);
    }
  });

  test('the KV browser words each kind for what it tried', () => {
    const attempt = { outcome: 'Not saved', access: 'write' as const, on: 'a/../b', conflict: 'a/../b changed since it was opened.' };
    expect(explained(failureOf(409, consulTxn('Permission denied')), attempt).message)
      .toBe('Not saved: permission denied: this token may not write a/../b; nothing was changed. (409: transaction not applied: Permission denied)');
    expect(explained(failureOf(409, consulTxn('failed to set key "a/../b", index is stale')), attempt).message)
      .toBe('Not saved: a/../b changed since it was opened. (409: transaction not applied: failed to set key "a/../b", index is stale)');
    expect(explained(failureOf(503, 'outcome unknown'), attempt).message).toBe('Not saved: 503: outcome unknown');
    expect(explained(new TypeError('Failed to fetch'), attempt).message).toBe('Not saved: Failed to fetch');
    expect(explained(failureOf(403, 'Permission denied'), { outcome: 'Cannot edit', access: 'read', on: 'k' }).message)
      .toBe('Cannot edit: permission denied: this token may not read k. (403: Permission denied)');
  });
});

describe('session TTL', () => {
  test('a zero duration is no TTL, as an empty one is; a term under a nanosecond counts as zero, as in Go', () => {
    const shown = (TTL: string) => sessionTtl({ TTL });
    for (const TTL of ['', '0', '0s', '0ms', '0m0s', '0.0s', '0.5ns', '0.0000000001s']) expect(shown(TTL), TTL).toBeUndefined();
    for (const TTL of ['10s', '90s', '1m30s', '1.5ns', '0.000000001s', '0.5h', '24h']) expect(shown(TTL), TTL).toBe(TTL);
  });
});
