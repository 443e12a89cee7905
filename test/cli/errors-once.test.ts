// Goal: every way `roster` (and the agent it starts) fails writes its reason once, behind one
// `roster:` prefix: a native binding that does not load, a bad agent flag, a data dir in use, an
// unreachable agent. Each runs the real command in its own process.
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

  test('a bad agent flag: the reason once and the usage, exit 2', async () => {
    const r = await roster(['agent', '--log-format', 'fancy']);
    expect(r.code).toBe(2);
    expectPrefixOnce(r.stderr, /^roster: --log-format: "fancy" is not one of json, pretty$/m);
    expect(r.stderr).toMatch(/usage: roster agent/);
  });

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
