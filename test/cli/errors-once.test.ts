// Goal: every way `roster` (and the agent it starts) fails writes its reason once, behind one
// `roster:` prefix: a native binding that does not load, a bad agent flag, a data dir in use, an
// unreachable agent. A bad value names where it came from (flag, variable or config file key) and comes
// without the usage, which only a flag that cannot be read gets. Each runs the real command in its own process.
import { writeFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { agentNode } from '../support/agent.ts';
import { roster, startRoster, type Running } from './support.ts';

const dirs: string[] = [];
const running: Running[] = [];
afterAll(async () => {
  for (const r of running) {
    r.proc.kill('SIGTERM');
    await r.exited;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-cli-err-'));
  dirs.push(dir);
  return dir;
}

/** The stderr lines that carry the prefix, each with how many times it appears. */
function prefixed(stderr: string): { line: string; times: number }[] {
  return stderr.split('\n').filter((l) => l.includes('roster:')).map((line) => ({ line, times: line.split('roster:').length - 1 }));
}

function expectPrefixOnce(stderr: string, reason: RegExp): void {
  const lines = prefixed(stderr);
  expect(lines.length, stderr).toBeGreaterThan(0);
  for (const { line, times } of lines) expect(times, line).toBe(1);
  expect(stderr).toMatch(reason);
}

describe('a failed start says "roster:" once', () => {
  test('a native binding that does not load: the reason once, exit 2', async () => {
    const r = await roster(['agent', '--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir()], { env: { ROSTER_UWS_MODULE: '/nonexistent/uws' } });
    expect(r.code).toBe(2);
    expectPrefixOnce(r.stderr, /^roster: the uWebSockets\.js native binding did not load on node v\d+/m);
  });

  test('a bad agent flag value: the reason once, without the usage, exit 2; an unknown flag gets the usage', async () => {
    const r = await roster(['agent', '--log-format', 'fancy']);
    expect(r.code).toBe(2);
    expectPrefixOnce(r.stderr, /^roster: --log-format: "fancy" is not one of json, pretty$/m);
    expect(r.stderr).not.toMatch(/usage:/);
    const unknown = await roster(['agent', '--log-formats', 'json']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/usage: roster agent/);
  });

  test('a bad value from the config file or a variable names that key or variable, exit 2', async () => {
    const dir = dataDir();
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ ports: { http: '21530x' } }));
    const port = await roster(['agent', '--config-file', file, '--data-dir', dir]);
    expect(port).toMatchObject({ code: 2, stderr: 'roster: the config file\'s ports.http (for --http-port): "21530x" is not a port number (0-65535)\n' });
    writeFileSync(file, JSON.stringify({ write_timeout: '500ms' }));
    const timeout = await roster(['agent', '--config-file', file, '--data-dir', dir]);
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toMatch(/^roster: the config file's write_timeout: "500ms" is less than 1s: [^\n]*\n$/);
    const key = await roster(['agent', '--data-dir', dir], { env: { ROSTER_ENCRYPT: 'bad' } });
    expect(key).toMatchObject({ code: 2, stderr: 'roster: ROSTER_ENCRYPT: not 32 bytes as base64 (make one with: openssl rand -base64 32)\n' });
    const env = await roster(['agent', '--data-dir', dir], { env: { ROSTER_GRPC_PORT: 'x' } });
    expect(env).toMatchObject({ code: 2, stderr: 'roster: ROSTER_GRPC_PORT (for --grpc-port): "x" is not a port number (0-65535)\n' });
  }, 60_000);

  test('a data dir held by another agent: the reason once, exit 2', async () => {
    const dir = dataDir();
    const first = startRoster(['agent', '--http-port', '0', '--grpc-port', '0', '--data-dir', dir], { timeoutMs: 60_000, node: agentNode });
    running.push(first);
    await first.waitFor(/roster listening/, 30_000);
    const second = await roster(['agent', '--http-port', '0', '--grpc-port', '0', '--data-dir', dir], { node: agentNode });
    expect(second.code).toBe(2);
    expectPrefixOnce(second.stderr, /^roster: --data-dir .*: in use by another roster agent/m);
  }, 60_000);
});

describe('a failed client command says "roster:" once', () => {
  test('an unreachable agent: exit 1', async () => {
    const r = await roster(['kv', 'get', 'x'], { agent: 'http://127.0.0.1:1' });
    expect(r.code).toBe(1);
    expectPrefixOnce(r.stderr, /^roster: cannot reach the agent at http:\/\/127\.0\.0\.1:1/m);
  });
});
