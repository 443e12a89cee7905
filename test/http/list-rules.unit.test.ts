// Goal: the query parameters the list rules leave alone are derived from the routes' declarations
// (plus the credentials'), and they are the names a route reads: a route's own parameter is never
// taken as a list parameter or an equality filter.
import { describe, expect, test } from 'vitest';
import { apiRouter } from '../../src/http/index.ts';
import { reservedParameters, withListRules } from '../../src/http/list-rules.ts';
import type { Request } from '../../src/http/request.ts';

const request = (query: string): Request => ({
  method: 'GET', path: '/v1/x', rest: '', query: new URLSearchParams(query), headers: new Map(), body: Buffer.alloc(0),
  signal: new AbortController().signal, id: 'r',
});

describe('reserved query parameters', () => {
  test('are the parameters the routes declare, the query options and the credentials', () => {
    expect(new Set(reservedParameters(apiRouter()))).toEqual(new Set([
      'index', 'wait', 'filter', 'dc', 'token', 'stale', 'consistent', 'leader', 'max_stale', 'recurse', 'keys', 'raw',
      'separator', 'seperator', 'passing', 'tag', 'near', 'node-meta', 'cas', 'flags', 'acquire', 'release', 'note',
      'replace-existing-checks', 'wan', 'segment', 'format', 'appKey', 'nonce', 'timestamp', 'signMethod', 'sign',
      'enable', 'reason', 'prune', 'loglevel', 'logjson', 'seconds', 'hash', 'cached',
    ]));
  });

  test('a reserved parameter named like a field filters nothing; an unreserved one does', () => {
    const reserved = reservedParameters(apiRouter());
    const list = { t: 'json' as const, value: [{ tag: 'a' }, { tag: 'b' }] };
    expect(withListRules(request('tag=a'), list, reserved).reply).toBe(list);
    expect(withListRules(request('tag=a'), list, []).reply).toMatchObject({ value: [{ tag: 'a' }] });
  });
});
