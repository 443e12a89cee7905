// Goal: the config file's rules hold alike for a started agent and `roster validate`. A key set twice in
// one object (JSON would keep the last without a word) stops the start with exit 2 naming the key and its
// path, and validate refuses the file with the same reason; the same key in two different objects is fine.
// Every numeric setting takes its digits as a string, rate_limit.requests included: an agent started with
// `"requests": "3"` limits callers to 3 requests per period.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { client, repoRoot, startAgent, tsxLoader, type Agent } from '../support/agent.ts';
import { roster } from '../cli/support.ts';

const dir = mkdtempSync(join(tmpdir(), 'roster-config-rules-'));
const started: Agent[] = [];
afterAll(async () => {
  for (const a of started) await a.stop();
  for (const a of started) a.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function startToExit(configFile: string) {
  return spawnSync(process.execPath, ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), '--http-port', '0', '--grpc-port', '0',
    '--data-dir', join(dir, 'data'), '--config-file', configFile], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
}

test('a key set twice in one object is refused by the agent (exit 2) and by validate, naming it', async () => {
  const cases: Array<[string, string]> = [
    ['{"log_level": "info", "limits": {"grpc_max_conns": 10}, "log_level": "debug"}', '"log_level"'],
    ['{"limits": {"grpc_max_conns": 10, "grpc_max_conns": 20}}', '"limits.grpc_max_conns"'],
    ['{"checks": [{"id": "a", "ttl": "30s"}, {"id": "b", "ttl": "30s", "i\\u0064": "c"}]}', '"checks[1].id"'],
  ];
  for (const [i, [text, key]] of cases.entries()) {
    const path = file(`twice-${i}.json`, text);
    const reason = `--config-file: ${path} sets ${key} twice`;
    const agent = startToExit(path);
    expect([agent.status, agent.stderr], text).toEqual([2, expect.stringContaining(`roster: ${reason}`)]);
    const validate = await roster(['validate', path]);
    expect([validate.code, validate.stderr], text).toEqual([1, expect.stringContaining(reason)]);
  }
}, 120_000);

test('the same key in different objects, and a key\'s text inside a string value, are valid', async () => {
  const path = file('alike.json', '{"checks": [{"id": "a", "name": "a", "ttl": "30s"}, {"id": "b", "name": "{\\"id\\": \\"a\\", [", "ttl": "30s"}], '
    + '"limits": {"grpc_max_conns": 10}, "node_name": "n1"}');
  const r = await roster(['validate', path]);
  expect([r.code, r.stderr]).toEqual([0, '']);
});

test('rate_limit.requests takes its digits as a string, as every numeric setting does', async () => {
  const agent = await startAgent({ args: ['--config-file', file('rate.json', JSON.stringify({ rate_limit: { requests: '3', period: '600s' } }))] });
  started.push(agent);
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await client(agent).get('/v1/status/leader')).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  for (const [requests, shown] of [['0', '"0"'], ['3x', '"3x"']] as const) {
    const r = startToExit(file(`rate-${requests}.json`, JSON.stringify({ rate_limit: { requests, period: '1s' } })));
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining(`roster: the config file's rate_limit.requests: ${shown} is not a positive integer`)]);
  }
}, 60_000);
