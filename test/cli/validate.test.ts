// Goal: `roster validate <file>` judges a config file as the agent would, without starting one: a good file
// (settings, services with checks) is valid (exit 0); a check naming a service the file does not define is
// named as what the agent must hold (exit 0, not called valid); a data_dir that is a file, a bad setting, an
// unknown key, a malformed service definition, JSON that does not parse or a missing file exit 1 with the
// agent's own reason; so does a value of
// the wrong type (never turned into text), a write_timeout too short to be of use and a kv_max_value_size
// larger than a log entry carries; the environment's ROSTER_* settings do not mask the file's mistakes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { roster, type RunResult } from './support.ts';

const dir = mkdtempSync(join(tmpdir(), 'roster-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** `roster validate` on each object written as a file, four at a time (each is a Node process). */
async function validateEach(prefix: string, objects: object[]): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (let i = 0; i < objects.length; i += 4) {
    const batch = objects.slice(i, i + 4).map((o, j) => roster(['validate', file(`${prefix}-${i + j}.json`, JSON.stringify(o))]));
    results.push(...await Promise.all(batch));
  }
  return results;
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
      ['name.json', JSON.stringify({ node_name: 'a b' }), /roster: the config file's node_name \(for --node-name\): "a b" may hold only letters/],
      ['key.json', JSON.stringify({ nope: 1 }), /roster: --config-file: unknown setting "nope"/],
      ['service.json', JSON.stringify({ services: [{ name: 'x', port: 'abc' }] }), /roster: --config-file: invalid service definition: invalid Port: must be an integer/],
      ['ttl.json', JSON.stringify({ session_ttl_min: '48h' }), /roster: the config file's session_ttl_min \(for --session-ttl-min\): "48h" is more than the largest session TTL/],
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

  test('a data_dir the agent cannot use is refused as the agent refuses it; a check naming a service outside the file is not called valid', async () => {
    const aFile = file('a-file', '');
    const dataDir = await roster(['validate', file('data-dir.json', JSON.stringify({ data_dir: aFile }))]);
    expect([dataDir.code, dataDir.stderr]).toEqual([1, `roster: --data-dir ${aFile}: cannot be used as the data dir: it, or a directory above it, is a file\n`]);
    const below = await roster(['validate', file('data-dir-below.json', JSON.stringify({ data_dir: join(aFile, 'data') }))]);
    expect([below.code, below.stderr]).toEqual([1, `roster: --data-dir ${join(aFile, 'data')}: cannot be used as the data dir: it, or a directory above it, is a file\n`]);
    const clusterDir = join(dir, 'cluster-node');
    mkdirSync(clusterDir);
    file('cluster-node/cluster', '');
    const mode = await roster(['validate', file('data-dir-mode.json', JSON.stringify({ data_dir: clusterDir }))]);
    expect([mode.code, mode.stderr]).toMatchObject([1, expect.stringMatching(/^roster: --data-dir .*cluster-node: it belongs to a cluster node/)]);
    const foreign = await roster(['validate', file('foreign.json', JSON.stringify({
      services: [{ id: 'web-1', name: 'web' }],
      checks: [{ id: 'own', name: 'own', ttl: '10s', service_id: 'web-1' }, { id: 'x', name: 'x', ttl: '10s', service_id: 'nope' }],
    }))]);
    expect(foreign.code).toBe(0);
    expect(foreign.stdout).not.toMatch(/Configuration is valid!/);
    expect(foreign.stdout).toMatch(/^Configuration is valid if the agent holds what this file names but does not define; an agent without it refuses the file:\n/);
    expect(foreign.stdout).toMatch(/check "x" needs a service with ID "nope" registered on the agent's node \(it is not in this file\)\n$/);
    expect(foreign.stdout).not.toMatch(/"own"/);
  });

  test('a value of the wrong type is refused naming the key and the type it must be, never turned into text', async () => {
    const cases: Array<[object, string]> = [
      [{ data_dir: {} }, 'data_dir must be a string, not an object'],
      [{ datacenter: true }, 'datacenter must be a string, not true'],
      [{ node_name: 123 }, 'node_name must be a string, not a number'],
      [{ ui_dir: false }, 'ui_dir must be a string, not false'],
      [{ ports: [1, 2] }, 'ports must be an object, not an array'],
      [{ ports: { http: true } }, 'ports.http must be a number (or its digits as a string), not true'],
      [{ limits: null }, 'limits must be an object, not null'],
      [{ limits: { kv_max_value_size: [1] } }, 'limits.kv_max_value_size must be a number (or its digits as a string), not an array'],
      [{ limits: { request_body_timeout: 8 } }, 'limits.request_body_timeout must be a string, not a number'],
      [{ encrypt: null }, 'encrypt must be a string, not null'],
      [{ join: ['127.0.0.1:8301', 8301] }, 'join must be a string or a list of strings, not a list holding a number'],
      [{ write_timeout: 30 }, 'write_timeout must be a string, not a number'],
      [{ rate_limit: { requests: 10, period: 1 } }, 'rate_limit.period must be a string, not a number'],
      [{ auth: null }, 'auth must be an object, not null'],
    ];
    const results = await validateEach('type', cases.map(([o]) => o));
    results.forEach((r, i) => {
      const [o, reason] = cases[i]!;
      expect([r.code, r.stderr], JSON.stringify(o)).toEqual([1, `roster: --config-file: ${reason}\n`]);
    });
  });

  test('numeric settings take JSON numbers or their digits; ports holds only http and grpc, as unknown top-level keys are refused', async () => {
    const numbers = file('numbers.json', JSON.stringify({ ports: { http: 8600, grpc: '8602' }, replicas: 3, writes_in_flight_max: '500', limits: { kv_max_value_size: 1048576 } }));
    const ports = file('ports.json', JSON.stringify({ ports: { http: 8500, https: 8501, dns: 53 } }));
    const [good, consulPorts] = await Promise.all([roster(['validate', numbers]), roster(['validate', ports])]);
    expect([good.code, good.stdout]).toEqual([0, 'Configuration is valid!\n']);
    expect([consulPorts.code, consulPorts.stderr]).toEqual([1, 'roster: --config-file: unknown setting "ports.https", "ports.dns"\n']);
  });

  test('write_timeout below 1s is refused; 1s is accepted', async () => {
    const cases: Array<[object, number, RegExp]> = [
      [{ write_timeout: '1ms' }, 1, /^roster: the config file's write_timeout: "1ms" is less than 1s: a durable write .* answered as timed out/],
      [{ write_timeout: '999ms' }, 1, /^roster: the config file's write_timeout: "999ms" is less than 1s/],
      [{ write_timeout: '1s' }, 0, /^$/],
    ];
    const results = await validateEach('bound', cases.map(([o]) => o));
    results.forEach((r, i) => {
      const [o, code, reason] = cases[i]!;
      expect(r.code, JSON.stringify(o)).toBe(code);
      expect(r.stderr, JSON.stringify(o)).toMatch(reason);
    });
  });

  test('check_update_interval takes a duration, 0s included (every output change written at once); a negative one is refused', async () => {
    const cases: Array<[object, number, RegExp]> = [
      [{ check_update_interval: '-1s' }, 1, /^roster: the config file's check_update_interval: "-1s" is not a duration such as 5m, or 0s to write every output change at once/],
      [{ check_update_interval: 'soon' }, 1, /^roster: the config file's check_update_interval: "soon" is not a duration/],
      [{ check_update_interval: '0s' }, 0, /^$/],
      [{ check_update_interval: '5m' }, 0, /^$/],
    ];
    const results = await validateEach('update-interval', cases.map(([o]) => o));
    results.forEach((r, i) => {
      const [o, code, reason] = cases[i]!;
      expect(r.code, JSON.stringify(o)).toBe(code);
      expect(r.stderr, JSON.stringify(o)).toMatch(reason);
    });
  });

  test('kv_max_value_size above what one log entry carries is refused; the largest it carries is accepted', async () => {
    const cases: Array<[object, number, RegExp]> = [
      [{ limits: { kv_max_value_size: 99999999999 } }, 1,
        /^roster: the config file's limits\.kv_max_value_size: 99999999999 is more than 12189696 bytes, the largest value one log entry can carry \(entries are at most 16777216 bytes/],
      [{ limits: { kv_max_value_size: 12189697 } }, 1, /^roster: the config file's limits\.kv_max_value_size: 12189697 is more than 12189696 bytes/],
      [{ limits: { kv_max_value_size: 12189696 } }, 0, /^$/],
    ];
    const results = await validateEach('kv', cases.map(([o]) => o));
    results.forEach((r, i) => {
      const [o, code, reason] = cases[i]!;
      expect(r.code, JSON.stringify(o)).toBe(code);
      expect(r.stderr, JSON.stringify(o)).toMatch(reason);
    });
  });
});
