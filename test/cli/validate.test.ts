// Goal: `roster validate <file>` judges a config file as the agent would, without starting one: a good file
// (settings, services with checks) is valid (exit 0); a bad setting, an unknown key, a malformed service
// definition, JSON that does not parse or a missing file exit 1 with the agent's own reason; the
// environment's ROSTER_* settings do not mask the file's mistakes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { roster } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'roster-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('roster validate', () => {
  test('a good file is valid', async () => {
    const good = file('good.json', JSON.stringify({
      node_name: 'web-1', log_level: 'warn', enable_debug: true, limits: { check_probes_max: 64 },
      services: [{ name: 'web', port: 80, check: { http: 'http://127.0.0.1:80/health', interval: '10s' } }],
      checks: [{ id: 'disk', name: 'disk', ttl: '30s' }],
    }));
    const r = await roster(['validate', good]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('Configuration is valid!\n');
  });

  test('what the agent would refuse exits 1 with its reason', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['name.json', JSON.stringify({ node_name: 'a b' }), /roster: --node-name: "a b" may hold only letters/],
      ['key.json', JSON.stringify({ nope: 1 }), /roster: --config-file: unknown setting "nope"/],
      ['service.json', JSON.stringify({ services: [{ name: 'x', port: 'abc' }] }), /roster: --config-file: invalid service definition: invalid Port: must be an integer/],
      ['ttl.json', JSON.stringify({ session_ttl_min: '48h' }), /roster: --session-ttl-min: "48h" is more than the largest session TTL/],
      ['json.json', '{bad', /roster: --config-file: .*json\.json is not valid JSON/],
    ];
    for (const [name, text, reason] of cases) {
      const r = await roster(['validate', file(name, text)], { env: { ROSTER_NODE_NAME: 'fine' } });
      expect(r.code, name).toBe(1);
      expect(r.stderr, name).toMatch(reason);
    }
    const missing = await roster(['validate', join(dir, 'missing.json')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*missing\.json: ENOENT/);
  });
});
