// Goal: the signed-request nonce memory cannot be filled by one caller, through a started agent. A nonce
// longer than 128 characters is refused (400/1009, signature `bad_nonce`) before anything is remembered,
// so no caller can make the memory large with long nonces; and each app key has its own share of the memory
// (200,000 divided among the keys, at least 10,000 each): a key that fills its share is refused 503/1016
// with Retry-After, alone, while every other key's signed requests go on being served.
import { describe, expect, test } from 'vitest';
import { canonicalString, signature, signRequest } from '../../src/auth/signature.ts';
import { call, expectError } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import { pipelinedGets } from '../support/pipelined-gets.ts';

const reader = [{ resource: 'key', prefix: 'public/', access: 'read' }];
// Twenty app keys: each one's share is 200,000 / 20 = 10,000 nonces.
const appKeys = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`app${i}`, { secret: `secret-${i}`, rules: reader }]));
const share = 10_000;

const signed = (appKey: string, nonce: string, path = '/v1/kv/public/a') =>
  `${path}?${signRequest({ method: 'GET', path, params: [], body: Buffer.alloc(0), appKey, secret: appKeys[appKey]!.secret, nonce, signMethod: 'HMACSHA256' })}`;

/** A signed GET whose nonce is `nonce` whatever its length (signRequest refuses one too long to send). */
function signedWithNonce(appKey: string, nonce: string, path = '/v1/kv/public/a'): string {
  const params: [string, string][] = [['appKey', appKey], ['nonce', nonce], ['timestamp', String(Math.floor(Date.now() / 1000))], ['signMethod', 'HMACSHA256']];
  const sign = signature('HMACSHA256', appKeys[appKey]!.secret, canonicalString('GET', path, params, Buffer.alloc(0)));
  return `${path}?${new URLSearchParams([...params, ['sign', sign]]).toString()}`;
}

describe('the nonce memory', () => {
  const a = useConfigAgent('roster-nonces-', { auth: { jwt_secret: 's'.repeat(40), app_keys: appKeys } });

  test('a nonce of more than 128 characters is refused 400/1009 (bad_nonce); one of 128 is taken', async () => {
    const long = await call(a.agent.url, 'GET', signedWithNonce('app0', 'n'.repeat(129)));
    const body = expectError(long, 400, 1009);
    expect(body.details).toEqual({ signature: 'bad_nonce' });
    expect(body.message).toBe('request signature refused: nonce must be at most 128 characters, not 129');
    expect((await call(a.agent.url, 'GET', signedWithNonce('app0', 'm'.repeat(128)))).status).toBe(404);
    // A 50 KB nonce, the size that grew the agent by 50 MB per thousand requests, is refused the same way.
    expectError(await call(a.agent.url, 'GET', signedWithNonce('app0', 'n'.repeat(50_000))), 400, 1009);
  });

  test('one app key that fills its share is refused alone; the others are served', async () => {
    // app1 uses its whole share (one request at a time on each connection: signed requests are not pipelined).
    const statuses = await pipelinedGets(a.agent.url, { count: share, path: (c, i) => signed('app1', `fill-${c}-${i}`), connections: 16, depth: 1 });
    expect(statuses).toEqual({ 404: share });
    const refused = await call(a.agent.url, 'GET', signed('app1', 'one-more'));
    expect(expectError(refused, 503, 1016).details).toMatchObject({ signature: 'busy' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Every other app key is served as before.
    for (const other of ['app2', 'app19']) expect((await call(a.agent.url, 'GET', signed(other, 'after-the-fill'))).status).toBe(404);
  }, 60_000);
});
