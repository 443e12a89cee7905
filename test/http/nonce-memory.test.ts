// Goal: the signed-request nonce memory cannot be made large by one caller, through a started agent. A
// nonce longer than 128 characters is refused (400/1009, signature `bad_nonce`) before anything is
// remembered, so no caller can grow the memory with long nonces.
import { describe, expect, test } from 'vitest';
import { canonicalString, signature } from '../../src/auth/signature.ts';
import { call, expectError } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';

const reader = [{ resource: 'key', prefix: 'public/', access: 'read' }];
const appKeys = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`app${i}`, { secret: `secret-${i}`, rules: reader }]));

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
});
