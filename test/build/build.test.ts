// Goal (compiled build): `npm run build` turns the agent and the CLI into plain JavaScript that node runs
// without tsx. The build script is run into a scratch directory inside the checkout (so the built files
// resolve node_modules as dist/server does); the built agent is started, must serve, and the built
// `roster` command must talk to it; under a descriptor limit too low to load, the built agent says so. How long `roster --help` takes built and through tsx is printed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoRoot, tempDataDir, tsxLoader } from '../support/agent.ts';
import { buildServer } from '../deploy/build-server.ts';

const readyPattern = /roster listening http=(http:\/\/[^\s"]+)/;

describe('the compiled build', () => {
  let scratch: string;
  let out: string;
  let data: string;
  let agent: ChildProcess | undefined;
  let url: string;

  beforeAll(async () => {
    mkdirSync(join(repoRoot, '.scratch'), { recursive: true });
    scratch = mkdtempSync(join(repoRoot, '.scratch', 'build-'));
    out = join(scratch, 'dist/server');
    data = tempDataDir();
    buildServer(out);
    const proc = spawn(process.execPath, [join(out, 'src/main.js'), '--http-port', '0', '--grpc-port', '0', '--data-dir', data, '--node-name', 'node1'], {
      cwd: scratch, env: process.env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent = proc;
    let log = '';
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the built agent was not ready in 60 s:\n${log}`)), 60_000);
      const onData = (d: Buffer) => {
        log += d.toString();
        const m = readyPattern.exec(log);
        if (m) { clearTimeout(timer); resolve(m[1]!); }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the built agent exited (${code}):\n${log}`)); });
    });
  }, 300_000);

  afterAll(async () => {
    if (agent?.pid !== undefined && agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((r) => agent!.once('exit', r));
      process.kill(agent.pid, 'SIGTERM');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
    rmSync(data, { recursive: true, force: true });
  });

  test('emits JavaScript only: no TypeScript and no declaration files, .ts imports rewritten', () => {
    const files = readdirSync(join(out, 'src'), { recursive: true }).map(String);
    expect(files.some((f) => f.endsWith('.js'))).toBe(true);
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
    expect(existsSync(join(out, 'src/cli/roster.js'))).toBe(true);
    expect(existsSync(join(out, 'proto/grpc/health/v1/health.proto'))).toBe(true);
  });

  test('the built agent serves the API', async () => {
    const leader = await fetch(`${url}/v1/status/leader`);
    expect(leader.status).toBe(200);
    const self = await fetch(`${url}/v1/agent/self`);
    expect(self.status).toBe(200);
  });

  test('the built roster command writes and reads a key through the built agent', () => {
    const env = { ...process.env, ROSTER_HTTP_ADDR: url };
    const cli = join(out, 'src/cli/roster.js');
    const put = spawnSync(process.execPath, [cli, 'kv', 'put', 'build/check', 'ok'], { cwd: scratch, env, encoding: 'utf8', timeout: 30_000 });
    expect(put.status, put.stderr).toBe(0);
    const get = spawnSync(process.execPath, [cli, 'kv', 'get', 'build/check'], { cwd: scratch, env, encoding: 'utf8', timeout: 30_000 });
    expect(get.status, get.stderr).toBe(0);
    expect(get.stdout).toBe('ok\n');
  });

  test('a descriptor limit too low to load the agent stops it with exit 2 saying what to raise, not an EMFILE stack', () => {
    const main = join(out, 'src/main.js');
    const run = (limit: number) => spawnSync('bash', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, main,
      '--http-port', '0', '--grpc-port', '0', '--data-dir', join(scratch, `low-${limit}`), '--node-name', 'low'], { cwd: scratch, encoding: 'utf8', timeout: 30_000 });
    for (const limit of [48, 64, 127]) {
      const r = run(limit);
      expect([r.status, r.stderr], `ulimit -n ${limit}`).toEqual([2, `roster: the limit on open files is ${limit} (ulimit -n); the agent needs at least 128 to start, `
        + 'and one per client connection, check and log stream besides: raise it (ulimit -n 65536 in the shell, LimitNOFILE= in a systemd unit)\n']);
      expect(existsSync(join(scratch, `low-${limit}`))).toBe(false);
    }
  });

  test('prints how long `roster --help` takes built and through tsx (not asserted: timing depends on load)', () => {
    const time = (args: string[]): number => {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, args, { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      return performance.now() - t0;
    };
    const built = Math.min(...[1, 2, 3].map(() => time([join(out, 'src/cli/roster.js'), '--help'])));
    const tsx = Math.min(...[1, 2, 3].map(() => time(['--import', tsxLoader, join(repoRoot, 'src/cli/roster.ts'), '--help'])));
    console.log(`roster --help: built ${built.toFixed(0)} ms, tsx ${tsx.toFixed(0)} ms (best of 3)`);
  }, 120_000);
});
