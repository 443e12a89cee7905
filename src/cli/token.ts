/**
 * `npm run token -- --subject <name> --rules '<json>' [--ttl 1h]` (and `roster token`): mints a bearer
 * token with the agent's JWT secret (ROSTER_AUTH_SECRET, or `auth.jwt_secret` of --config-file) for
 * bootstrap. Rules: [{"resource":"key","prefix":"app/","access":"write"}, ...]. A subject beginning with
 * `app:` is refused: that namespace is the signed-request callers'.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { appSubjectPrefix, isAppSubject, parseRules, TokenAuthority, tokenLifetimeSecondsMaxDefault, type TokenAuthorityOptions } from '../auth/index.ts';
import { authSettings, ConfigError } from '../config.ts';
import { parseGoDurationMs } from '../util/duration.ts';

/** What is wrong with the request for a token (a usage error: exit 2). */
export class TokenRequestError extends Error {}

export interface TokenRequest {
  subject?: string | undefined;
  /** JSON text of the rules. @default "[]" */
  rules?: string | undefined;
  /** A Go duration. @default "1h" */
  ttl?: string | undefined;
  configFile?: string | undefined;
}

/** The agent's token settings: its secret, lifetime limit and audience, from the environment and the config file. */
function authorityOptions(configFile: string | undefined, env: NodeJS.ProcessEnv): TokenAuthorityOptions {
  let auth: Record<string, unknown> = {};
  if (configFile !== undefined) {
    let file: { auth?: unknown };
    try {
      file = JSON.parse(readFileSync(configFile, 'utf8')) as typeof file;
    } catch (err) {
      throw new TokenRequestError(`--config-file: cannot read ${configFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (file?.auth !== null && typeof file?.auth === 'object') auth = file.auth as Record<string, unknown>;
  }
  const secret = env.ROSTER_AUTH_SECRET ?? auth.jwt_secret;
  if (typeof secret !== 'string' || secret === '') throw new TokenRequestError('no secret: set ROSTER_AUTH_SECRET or give --config-file with auth.jwt_secret');
  // The agent's own reading of the auth section, so a token minted here is one it accepts.
  let settings;
  try {
    settings = authSettings({ ...auth, jwt_secret: secret }, undefined);
  } catch (err) {
    if (err instanceof ConfigError) throw new TokenRequestError(err.message);
    throw err;
  }
  return {
    secret,
    ...(settings?.tokenLifetimeSecondsMax !== undefined ? { tokenLifetimeSecondsMax: settings.tokenLifetimeSecondsMax } : {}),
    ...(settings?.audiences !== undefined ? { audiences: settings.audiences } : {}),
  };
}

/** Checks the request, then mints the token; a bad request throws TokenRequestError and mints nothing. */
export async function mintToken(req: TokenRequest, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const authority = authorityOptions(req.configFile, env);
  if (!req.subject) throw new TokenRequestError('--subject is required');
  if (isAppSubject(req.subject)) {
    throw new TokenRequestError(`--subject must not begin with ${appSubjectPrefix}: that namespace names signed-request callers (app keys), and the agent refuses such a token`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.rules ?? '[]');
  } catch {
    throw new TokenRequestError('--rules must be JSON');
  }
  const rules = parseRules(parsed);
  if (rules === undefined) throw new TokenRequestError('--rules: each rule is {resource, prefix, access: read|write|deny}');
  const ttlMs = parseGoDurationMs(req.ttl ?? '1h');
  if (ttlMs === undefined || ttlMs <= 0) throw new TokenRequestError('--ttl must be a positive duration such as 1h');
  const ttlSeconds = Math.round(ttlMs / 1000);
  const lifetimeMax = authority.tokenLifetimeSecondsMax ?? tokenLifetimeSecondsMaxDefault;
  if (ttlSeconds > lifetimeMax) {
    throw new TokenRequestError(`--ttl must be at most the agent's auth.max_token_lifetime (${lifetimeMax} s); the agent would refuse the token before then`);
  }
  return new TokenAuthority(authority).mint({ subject: req.subject, rules, ttlSeconds });
}

async function script(): Promise<void> {
  const { values } = parseArgs({
    options: { subject: { type: 'string' }, rules: { type: 'string' }, ttl: { type: 'string', default: '1h' }, 'config-file': { type: 'string' } },
  });
  try {
    process.stdout.write(`${await mintToken({ subject: values.subject, rules: values.rules, ttl: values.ttl, configFile: values['config-file'] })}\n`);
  } catch (err) {
    if (!(err instanceof TokenRequestError)) throw err;
    process.stderr.write(`token: ${err.message}\n`);
    process.exit(2);
  }
}

function isEntryModule(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryModule()) await script();
