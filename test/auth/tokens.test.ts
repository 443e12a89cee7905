// Goal: a minted token verifies to the same identity; an expired one fails as `expired` (1005) and every
// forged, foreign or malformed one as `invalid` (1021); the lifetime limit, the clock leeway and the audience
// hold; no error ever carries the token.
import { SignJWT } from 'jose';
import { describe, expect, test } from 'vitest';
import {
  AuthError,
  TokenAuthority,
  bearerToken,
  clockSkewSecondsDefault,
  wwwAuthenticate,
  type AuthErrorKind,
  type Rule,
} from '../../src/auth/index.ts';

const secret = 'a-shared-secret-of-at-least-32-bytes!';
const rules: Rule[] = [
  { resource: 'key', prefix: 'app/', access: 'write' },
  { resource: 'key', prefix: 'app/secret/', access: 'deny' },
];

function fakeClock(startMs: number) {
  let now = startMs;
  return { nowMs: () => now, advance: (ms: number) => void (now += ms) };
}

async function failure(p: Promise<unknown>): Promise<AuthError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthError);
  return err as AuthError;
}

async function expectKind(p: Promise<unknown>, kind: AuthErrorKind, code: number, token?: string) {
  const err = await failure(p);
  expect(err.kind).toBe(kind);
  expect(err.code).toBe(code);
  expect(err.status).toBe(401);
  if (token !== undefined && token !== '') {
    expect(err.message).not.toContain(token);
    expect(JSON.stringify(err)).not.toContain(token);
    expect(err.cause).toBeUndefined();
  }
}

describe('TokenAuthority', () => {
  test('mint → verify round trip gives the subject, the rules and the expiry (exp + the allowed skew) back', async () => {
    const clock = fakeClock(1_700_000_000_500);
    const authority = new TokenAuthority({ secret, clock });
    const token = await authority.mint({ subject: 'alice', rules, ttlSeconds: 60 });
    expect(token.split('.')).toHaveLength(3);
    await expect(authority.verify(token)).resolves.toEqual({ subject: 'alice', rules, expiresAtMs: (1_700_000_060 + clockSkewSecondsDefault) * 1000 });
  });

  test('claims: HS256, iss roster, sub, iat, exp = iat + ttl, rules', async () => {
    const clock = fakeClock(1_700_000_000_500);
    const token = await new TokenAuthority({ secret, clock }).mint({ subject: 'alice', rules, ttlSeconds: 30 });
    const [header, payload] = token.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({ iss: 'roster', sub: 'alice', iat: 1_700_000_000, exp: 1_700_000_030, rules });
  });

  test('a negative ttl mints an already expired token → expired (1005)', async () => {
    const authority = new TokenAuthority({ secret });
    const token = await authority.mint({ subject: 'alice', rules, ttlSeconds: -60 });
    await expectKind(authority.verify(token), 'expired', 1005, token);
  });

  test('expiry follows the clock, with the configured skew tolerated', async () => {
    const clock = fakeClock(1_700_000_000_000);
    const authority = new TokenAuthority({ secret, clock, clockSkewSeconds: 5 });
    const token = await authority.mint({ subject: 'alice', rules, ttlSeconds: 10 });
    clock.advance(14_000);
    await expect(authority.verify(token)).resolves.toMatchObject({ subject: 'alice' });
    clock.advance(2_000);
    await expectKind(authority.verify(token), 'expired', 1005, token);
  });

  test('lifetime limit: a token older than tokenLifetimeSecondsMax (+ skew) is expired whatever its exp; mint refuses a longer ttl', async () => {
    const clock = fakeClock(1_700_000_000_000);
    const authority = new TokenAuthority({ secret, clock, clockSkewSeconds: 0, tokenLifetimeSecondsMax: 3600 });
    const sign = (claims: Record<string, unknown>) => new SignJWT({ rules, ...claims }).setProtectedHeader({ alg: 'HS256' })
      .setIssuer('roster').setSubject('alice').sign(new TextEncoder().encode(secret));
    const long = await sign({ iat: 1_700_000_000, exp: 1_700_000_000 + 30 * 86400 });
    await expect(authority.verify(long)).resolves.toMatchObject({ expiresAtMs: (1_700_000_000 + 3600) * 1000 });
    clock.advance(3_601_000);
    await expectKind(authority.verify(long), 'expired', 1005, long);
    await expect(authority.mint({ subject: 'alice', rules, ttlSeconds: 3601 })).rejects.toThrow(RangeError);
    await expect(new TokenAuthority({ secret }).mint({ subject: 'alice', rules, ttlSeconds: 86401 })).rejects.toThrow(RangeError);
  });

  test('iat or nbf beyond the leeway in the future → invalid; within it → accepted', async () => {
    const clock = fakeClock(1_700_000_000_000);
    const authority = new TokenAuthority({ secret, clock });
    const sign = (claims: Record<string, unknown>) => new SignJWT({ rules, ...claims }).setProtectedHeader({ alg: 'HS256' })
      .setIssuer('roster').setSubject('alice').setExpirationTime(1_700_003_000).sign(new TextEncoder().encode(secret));
    await expect(authority.verify(await sign({ iat: 1_700_000_000 + clockSkewSecondsDefault }))).resolves.toMatchObject({ subject: 'alice' });
    await expectKind(authority.verify(await sign({ iat: 1_700_000_001 + clockSkewSecondsDefault })), 'invalid', 1021);
    await expectKind(authority.verify(await sign({ iat: 1_700_000_000, nbf: 1_700_000_001 + clockSkewSecondsDefault })), 'invalid', 1021);
  });

  test('audience: without one configured any aud is refused; with one, aud must name it and minted tokens do', async () => {
    const plain = new TokenAuthority({ secret });
    const scoped = new TokenAuthority({ secret, audiences: ['roster-a', 'roster-b'] });
    const forB = await new TokenAuthority({ secret, audiences: ['roster-b'] }).mint({ subject: 'alice', rules, ttlSeconds: 60 });
    await expectKind(plain.verify(forB), 'invalid', 1021, forB);
    await expect(scoped.verify(forB)).resolves.toMatchObject({ subject: 'alice' });
    await expect(scoped.verify(await scoped.mint({ subject: 'alice', rules, ttlSeconds: 60 }))).resolves.toMatchObject({ subject: 'alice' });
    const none = await plain.mint({ subject: 'alice', rules, ttlSeconds: 60 });
    await expectKind(scoped.verify(none), 'invalid', 1021, none);
    const other = await new TokenAuthority({ secret, audiences: ['elsewhere'] }).mint({ subject: 'alice', rules, ttlSeconds: 60 });
    await expectKind(scoped.verify(other), 'invalid', 1021, other);
  });

  test('a tampered signature → invalid (1021)', async () => {
    const authority = new TokenAuthority({ secret });
    const token = await authority.mint({ subject: 'alice', rules, ttlSeconds: 60 });
    const [h, p, s] = token.split('.') as [string, string, string];
    const flipped = (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    await expectKind(authority.verify(`${h}.${p}.${flipped}`), 'invalid', 1021, token);
  });

  test('a tampered payload (more rules) → invalid', async () => {
    const authority = new TokenAuthority({ secret });
    const token = await authority.mint({ subject: 'alice', rules: [], ttlSeconds: 60 });
    const [h, p, s] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.rules = [{ resource: 'operator', prefix: '', access: 'write' }];
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    await expectKind(authority.verify(forged), 'invalid', 1021, forged);
  });

  test('a token signed with another secret → invalid', async () => {
    const other = new TokenAuthority({ secret: 'another-secret-that-is-32-bytes-long' });
    const token = await other.mint({ subject: 'alice', rules, ttlSeconds: 60 });
    await expectKind(new TokenAuthority({ secret }).verify(token), 'invalid', 1021, token);
  });

  test('a token of another issuer → invalid', async () => {
    const token = await new TokenAuthority({ secret, issuer: 'someone-else' }).mint({ subject: 'alice', rules, ttlSeconds: 60 });
    await expectKind(new TokenAuthority({ secret }).verify(token), 'invalid', 1021, token);
  });

  test('alg none and other algorithms are refused', async () => {
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: 'roster', sub: 'alice', iat: 1, exp: 9_999_999_999, rules: [] }),
    ).toString('base64url')}.`;
    const authority = new TokenAuthority({ secret });
    await expectKind(authority.verify(none), 'invalid', 1021, none);
    const hs512 = await new SignJWT({ rules: [] })
      .setProtectedHeader({ alg: 'HS512' })
      .setIssuer('roster')
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(secret.repeat(2)));
    await expectKind(new TokenAuthority({ secret: secret.repeat(2) }).verify(hs512), 'invalid', 1021, hs512);
  });

  test('validly signed tokens with missing or malformed claims → invalid', async () => {
    const key = new TextEncoder().encode(secret);
    const authority = new TokenAuthority({ secret });
    const base = () => new SignJWT({ rules: [] }).setProtectedHeader({ alg: 'HS256' }).setIssuer('roster').setIssuedAt();
    const noExp = await base().setSubject('alice').sign(key);
    const noSub = await base().setExpirationTime('1h').sign(key);
    const badRules = await new SignJWT({ rules: [{ resource: 'everything', prefix: '', access: 'write' }] })
      .setProtectedHeader({ alg: 'HS256' }).setIssuer('roster').setIssuedAt().setSubject('alice').setExpirationTime('1h').sign(key);
    const noRules = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' }).setIssuer('roster').setIssuedAt().setSubject('alice').setExpirationTime('1h').sign(key);
    for (const token of [noExp, noSub, badRules, noRules]) await expectKind(authority.verify(token), 'invalid', 1021, token);
  });

  test('garbage → invalid, never another error', async () => {
    const authority = new TokenAuthority({ secret });
    const garbage = ['', 'x', 'a.b.c', '...', 'e30.e30.', '%%%.%%%.%%%', 'eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA', 'a'.repeat(20_000)];
    for (const token of garbage) await expectKind(authority.verify(token), 'invalid', 1021, token);
  });

  test('a secret shorter than 32 bytes is refused at construction', () => {
    expect(() => new TokenAuthority({ secret: 'short' })).toThrow(RangeError);
    expect(() => new TokenAuthority({ secret: 'x'.repeat(31) })).toThrow(RangeError);
    expect(() => new TokenAuthority({ secret: 'x'.repeat(32) })).not.toThrow();
  });

  test('a subject in the signed callers\' namespace (app:) is refused: verify → invalid, mint throws', async () => {
    const authority = new TokenAuthority({ secret });
    const appLike = await new SignJWT({ rules })
      .setProtectedHeader({ alg: 'HS256' }).setIssuer('roster').setIssuedAt().setSubject('app:app1').setExpirationTime('1h').sign(new TextEncoder().encode(secret));
    await expect(authority.verify(appLike)).rejects.toThrow(expect.objectContaining({ kind: 'invalid', code: 1021, message: expect.stringMatching(/must not begin with app:/) }));
    await expect(authority.mint({ subject: 'app:app1', rules, ttlSeconds: 60 })).rejects.toThrow(RangeError);
    expect((await authority.verify(await authority.mint({ subject: 'apps', rules, ttlSeconds: 60 }))).subject).toBe('apps');
  });

  test('mint refuses an empty subject and malformed rules', async () => {
    const authority = new TokenAuthority({ secret });
    await expect(authority.mint({ subject: '', rules, ttlSeconds: 60 })).rejects.toThrow(RangeError);
    const bad = [{ resource: 'key', prefix: '', access: 'all' }] as unknown as Rule[];
    await expect(authority.mint({ subject: 'alice', rules: bad, ttlSeconds: 60 })).rejects.toThrow(RangeError);
  });
});

describe('bearerToken and WWW-Authenticate', () => {
  test('no Authorization header → missing (1002)', () => {
    for (const header of [undefined, '', '  ']) {
      expect(() => bearerToken(header)).toThrow(expect.objectContaining({ kind: 'missing', code: 1002 }));
    }
  });

  test('Bearer <token> gives the token; the scheme is case-insensitive', () => {
    expect(bearerToken('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerToken('bearer abc.def-_.ghi')).toBe('abc.def-_.ghi');
  });

  test('another scheme or an empty Bearer → invalid (1021)', () => {
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'Bearer a b', 'Token abc']) {
      expect(() => bearerToken(header)).toThrow(expect.objectContaining({ kind: 'invalid', code: 1021 }));
    }
  });

  test('WWW-Authenticate follows RFC 6750', () => {
    expect(wwwAuthenticate(new AuthError('missing'))).toBe('Bearer realm="roster"');
    expect(wwwAuthenticate(new AuthError('expired'))).toBe(
      'Bearer realm="roster", error="invalid_token", error_description="token expired"',
    );
    expect(wwwAuthenticate(new AuthError('invalid'))).toContain('error="invalid_token"');
    expect(wwwAuthenticate()).toBe('Bearer realm="roster"');
  });
});
