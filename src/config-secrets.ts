/**
 * The settings that hold secrets: `auth` (the JWT secret and app keys) and `encrypt` (the gossip key).
 * Their errors never quote the secret itself.
 */
import type { AuthSettings } from './http/auth-gate.ts';
import { clockSkewSecondsDefault, parseRules, tokenLifetimeSecondsMaxDefault } from './auth/index.ts';
import { timestampSkewMsDefault } from './auth/signature.ts';
import type { NatsAuth } from '../cluster/index.ts';
import { ConfigError } from './config-error.ts';
import { parseGoDurationMs } from './util/duration.ts';

const authKeys = ['jwt_secret', 'app_keys', 'max_token_lifetime', 'clock_skew', 'audience', 'signature_window'];
/** Largest max_token_lifetime, clock_skew and signature_window accepted (a year: far past any sensible value). */
const authDurationMsMax = 365 * 24 * 3_600_000;

/**
 * `auth: {jwt_secret, app_keys: {<appKey>: {secret, rules}}, max_token_lifetime, clock_skew, audience,
 * signature_window}`; ROSTER_AUTH_SECRET overrides the secret. Unknown keys are refused.
 */
export function authSettings(value: unknown, envSecret: string | undefined): AuthSettings | undefined {
  if (value === undefined && envSecret === undefined) return undefined;
  const o = (value ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new ConfigError('--config-file: auth must be an object');
  const unknown = Object.keys(o).filter((k) => !authKeys.includes(k));
  if (unknown.length > 0) throw new ConfigError(`--config-file: unknown setting ${unknown.map((k) => JSON.stringify(`auth.${k}`)).join(', ')}`);
  const jwtSecret = envSecret ?? o.jwt_secret;
  if (typeof jwtSecret !== 'string' || Buffer.byteLength(jwtSecret) < 32) throw new ConfigError('auth: jwt_secret (or ROSTER_AUTH_SECRET) must be a string of at least 32 bytes');
  const appKeys: AuthSettings['appKeys'] = Object.fromEntries(Object.entries((o.app_keys ?? {}) as Record<string, unknown>).map(([key, entry]) => {
    const e = entry as { secret?: unknown; rules?: unknown };
    const rules = parseRules(e?.rules ?? []);
    if (typeof e?.secret !== 'string' || e.secret === '' || rules === undefined) throw new ConfigError(`auth.app_keys.${key}: needs a secret and valid rules`);
    return [key, { secret: e.secret, rules }];
  }));
  const seconds = (key: string, fallbackSeconds: number, zeroAllowed: boolean) => {
    const text = o[key];
    if (text === undefined) return fallbackSeconds;
    const ms = typeof text === 'string' ? parseGoDurationMs(text) : undefined;
    if (ms === undefined || ms < (zeroAllowed ? 0 : 1000) || ms > authDurationMsMax || ms % 1000 !== 0) {
      throw new ConfigError(`--config-file: auth.${key}: ${JSON.stringify(text)} is not a duration in whole seconds from ${zeroAllowed ? '0s' : '1s'} to 8760h`);
    }
    return ms / 1000;
  };
  const audience = o.audience ?? [];
  const audiences = typeof audience === 'string' ? [audience] : audience;
  if (!Array.isArray(audiences) || !audiences.every((a) => typeof a === 'string' && a !== '')) {
    throw new ConfigError('--config-file: auth.audience must be a non-empty string or a list of them');
  }
  return {
    jwtSecret, appKeys,
    tokenLifetimeSecondsMax: seconds('max_token_lifetime', tokenLifetimeSecondsMaxDefault, false),
    clockSkewSeconds: seconds('clock_skew', clockSkewSecondsDefault, true),
    audiences: audiences as string[],
    signatureSkewMs: seconds('signature_window', timestampSkewMsDefault / 1000, false) * 1000,
  };
}

/** Bytes of the gossip key: XSalsa20's key size, and what `consul keygen` prints (as base64). */
const gossipKeyBytes = 32;

/** `encrypt`: base64 of 32 random bytes (`openssl rand -base64 32`); the value itself is never in an error. */
export function gossipKey(text: string | undefined): Uint8Array | undefined {
  if (text === undefined) return undefined;
  const bytes = Buffer.from(text.trim(), 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text.trim()) || bytes.length !== gossipKeyBytes) {
    throw new ConfigError(`encrypt: not ${gossipKeyBytes} bytes as base64 (make one with: openssl rand -base64 ${gossipKeyBytes})`);
  }
  return new Uint8Array(bytes);
}

const natsAuthKeys = ['user', 'password', 'token'];

/**
 * The --nats URLs without credentials, and the credentials: `nats_auth: {user, password}` or `{token}` in
 * the config file, where ROSTER_NATS_PASSWORD and ROSTER_NATS_TOKEN override the secret, or a URL's
 * userinfo (`nats://user:password@host:port`, `nats://token@host:port`), the same in every URL that has
 * one. The URLs keep no credentials, so what shows them (the log, /v1/agent/self) shows no secret, and no
 * error quotes one.
 */
export function natsSettings(urls: string[], fileValue: unknown, env: { password?: string | undefined; token?: string | undefined }): { nats: string[]; natsAuth: NatsAuth | undefined } {
  const fromUrls = new Map<string, NatsAuth>();
  const nats = urls.map((u) => {
    if (!u.includes('@')) {
      if (!URL.canParse(u.includes('://') ? u : `nats://${u}`)) throw new ConfigError(`--nats: "${u}" is not a server URL such as nats://host:4222`);
      return u;
    }
    let url: URL;
    try {
      url = new URL(u.includes('://') ? u : `nats://${u}`);
    } catch {
      throw new ConfigError('--nats: a URL with credentials does not parse (write nats://user:password@host:port)');
    }
    const user = decodeURIComponent(url.username);
    const pass = decodeURIComponent(url.password);
    fromUrls.set(`${user}\0${pass}`, url.password === '' ? { token: user } : { user, pass });
    url.username = '';
    url.password = '';
    return url.href;
  });
  if (fromUrls.size > 1) throw new ConfigError('--nats: the URLs carry different credentials; give them once, in nats_auth');
  const file = fileNatsAuth(fileValue, env);
  if (file !== undefined && fromUrls.size > 0) throw new ConfigError('--nats: credentials are given both in a URL and in nats_auth; give them once');
  return { nats, natsAuth: file ?? [...fromUrls.values()][0] };
}

function fileNatsAuth(value: unknown, env: { password?: string | undefined; token?: string | undefined }): NatsAuth | undefined {
  if (value === undefined && env.password === undefined && env.token === undefined) return undefined;
  const o = (value ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new ConfigError('--config-file: nats_auth must be an object');
  const unknown = Object.keys(o).filter((k) => !natsAuthKeys.includes(k));
  if (unknown.length > 0) throw new ConfigError(`--config-file: unknown setting ${unknown.map((k) => JSON.stringify(`nats_auth.${k}`)).join(', ')}`);
  const token = env.token ?? o.token;
  const pass = env.password ?? o.password;
  if (token !== undefined && (o.user !== undefined || pass !== undefined)) {
    throw new ConfigError('nats_auth: give a user and password, or a token, not both');
  }
  if (token !== undefined) {
    if (typeof token !== 'string' || token === '') throw new ConfigError('nats_auth: token (or ROSTER_NATS_TOKEN) must be a non-empty string');
    return { token };
  }
  if (typeof o.user !== 'string' || o.user === '' || typeof pass !== 'string' || pass === '') {
    throw new ConfigError('nats_auth: needs a user and a password (the password in the file or ROSTER_NATS_PASSWORD), both non-empty strings');
  }
  return { user: o.user, pass };
}
