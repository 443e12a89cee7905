/**
 * `npm run token -- --subject <name> --rules '<json>' [--ttl 1h]`: mints a bearer token with the
 * agent's JWT secret (ROSTER_AUTH_SECRET, or `auth.jwt_secret` of --config-file) for bootstrap.
 * Rules: [{"resource":"key","prefix":"app/","access":"write"}, ...].
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseRules, TokenAuthority } from '../auth/index.ts';
import { parseGoDurationMs } from '../util/duration.ts';

function fail(message: string): never {
  process.stderr.write(`token: ${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: { subject: { type: 'string' }, rules: { type: 'string' }, ttl: { type: 'string', default: '1h' }, 'config-file': { type: 'string' } },
});
const file = values['config-file'] ? (JSON.parse(readFileSync(values['config-file'], 'utf8')) as { auth?: { jwt_secret?: string } }) : {};
const secret = process.env.ROSTER_AUTH_SECRET ?? file.auth?.jwt_secret;
if (secret === undefined) fail('no secret: set ROSTER_AUTH_SECRET or give --config-file with auth.jwt_secret');
if (!values.subject) fail('--subject is required');
let parsed: unknown;
try {
  parsed = JSON.parse(values.rules ?? '[]');
} catch {
  fail('--rules must be JSON');
}
const rules = parseRules(parsed);
if (rules === undefined) fail('--rules: each rule is {resource, prefix, access: read|write|deny}');
const ttlMs = parseGoDurationMs(values.ttl!);
if (ttlMs === undefined || ttlMs <= 0) fail('--ttl must be a positive duration such as 1h');
const token = await new TokenAuthority({ secret }).mint({ subject: values.subject, rules, ttlSeconds: Math.round(ttlMs / 1000) });
process.stdout.write(`${token}\n`);
