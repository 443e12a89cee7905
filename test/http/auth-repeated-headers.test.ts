// Goal: a request carrying its credentials twice (two Authorization headers, or two X-Consul-Token headers) is
// refused before its credentials are judged, 400 in the dialect's format (seed: code 1022; consul: plain
// text), on a started agent, whichever token comes first and whether or not either is valid; so neither
// the first nor the last can decide for a gateway that read the other. One of each is not a repetition.
// The stream's upgrade refuses the same way.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority } from '../../src/auth/index.ts';
import { startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { rawExchange, type RawAnswer } from '../support/raw-http.ts';

const secret = 'a-repeated-header-secret-long-enough-0123';
const tokens = new TokenAuthority({ secret });

let seed: Agent;
let consul: Agent;
let admin: string;
let low: string;

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  [seed, consul] = await Promise.all([
    startAgent({ args: ['--config-file', configFile] }),
    startAgent({ args: ['--config-file', configFile, '--dialect', 'consul'] }),
  ]);
  admin = await tokens.mint({ subject: 'admin', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 });
  low = await tokens.mint({ subject: 'low', rules: [{ resource: 'key', prefix: 'pub/', access: 'read' }], ttlSeconds: 600 });
}, 60_000);
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
});

async function get(agent: Agent, path: string, lines: string[]): Promise<RawAnswer> {
  const host = new URL(agent.url).host;
  const close = lines.some((l) => l.startsWith('Connection:')) ? [] : ['Connection: close'];
  const got = await rawExchange(agent.url, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${[...close, ...lines].map((l) => `${l}\r\n`).join('')}\r\n`);
  expect(got.answers, JSON.stringify(got)).toHaveLength(1);
  return got.answers[0]!;
}

const repeated = (): [string, string[]][] => [
  ['Authorization, the lesser token first', [`Authorization: Bearer ${low}`, `Authorization: Bearer ${admin}`]],
  ['Authorization, the greater token first', [`Authorization: Bearer ${admin}`, `Authorization: Bearer ${low}`]],
  ['Authorization, neither valid', ['Authorization: Bearer x.y.z', 'Authorization: Bearer nope']],
  ['X-Consul-Token', [`X-Consul-Token: ${low}`, `X-Consul-Token: ${admin}`]],
];

describe('a credential header given twice is refused before authentication', () => {
  test('seed dialect: 400, code 1022, naming the header', async () => {
    for (const [what, lines] of repeated()) {
      const r = await get(seed, '/v1/kv/secret/a', lines);
      expect(r.status, what).toBe(400);
      const body = JSON.parse(r.body) as { code: number; message: string };
      expect(body.code, what).toBe(1022);
      expect(body.message.toLowerCase(), what).toContain(lines[0]!.split(':')[0]!.toLowerCase());
      expect(r.headers['www-authenticate'], what).toBeUndefined();
    }
  });

  test('consul dialect: 400 in plain text', async () => {
    for (const [what, lines] of repeated()) {
      const r = await get(consul, '/v1/kv/secret/a', lines);
      expect(r.status, what).toBe(400);
      expect(r.headers['content-type'], what).toMatch(/^text\/plain/);
      expect(r.body.toLowerCase(), what).toContain(lines[0]!.split(':')[0]!.toLowerCase());
    }
  });

  test('one Authorization and one X-Consul-Token are no repetition: Authorization decides, as documented', async () => {
    const r = await get(seed, '/v1/kv/secret/a', [`Authorization: Bearer ${low}`, `X-Consul-Token: ${admin}`]);
    expect(r.status, r.body).toBe(403);
  });

  test('the stream\'s upgrade is refused the same way', async () => {
    const r = await get(seed, '/v1/stream', [
      'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      `Authorization: Bearer ${low}`, `Authorization: Bearer ${admin}`,
    ]);
    expect(r.status, r.body).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({ code: 1022 });
  });
});
