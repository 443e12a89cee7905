// Goal (deployment): no container engine runs here, so the deployment files are checked as far
// as a machine without one can: the Dockerfile's final stage is rebuilt as a plain directory (its
// `npm ci --omit=dev --ignore-scripts` and its COPY lines, with dist/server compiled as the build stage
// compiles it) and its ENTRYPOINT + CMD are run from there —
// the agent must start with the runtime dependencies only, serve the API and the dashboard, and the
// `roster` command must work from the same files. Every ROSTER_* variable that deploy/compose.yaml and
// deploy/roster.service set must be one the agent reads.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoRoot } from '../support/agent.ts';
import { buildServer } from './build-server.ts';

const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');

/** The instructions after the last FROM, one per line (no line continuations are used in this Dockerfile). */
function finalStage(): string[] {
  const lines = dockerfile.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const from = lines.map((l, k) => (l.startsWith('FROM ') ? k : -1)).filter((k) => k >= 0).at(-1)!;
  return lines.slice(from);
}

function jsonArray(instruction: string): string[] {
  const line = finalStage().find((l) => l.startsWith(`${instruction} `));
  if (line === undefined) throw new Error(`the Dockerfile's final stage has no ${instruction}`);
  return JSON.parse(line.slice(instruction.length + 1)) as string[];
}

function envOf(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of finalStage().filter((l) => l.startsWith('ENV '))) {
    for (const m of line.slice(4).matchAll(/([A-Z_]+)=(\S+)/g)) env[m[1]!] = m[2]!;
  }
  return env;
}

describe('the Dockerfile\'s final stage, rebuilt as a directory', () => {
  let app: string;
  let data: string;
  let agent: ReturnType<typeof spawn> | undefined;
  let url: string;

  beforeAll(async () => {
    app = mkdtempSync(join(tmpdir(), 'roster-image-'));
    data = mkdtempSync(join(tmpdir(), 'roster-image-data-'));
    const stage = finalStage();
    expect(stage.some((l) => l === 'COPY package.json package-lock.json ./')).toBe(true);
    cpSync(join(repoRoot, 'package.json'), join(app, 'package.json'));
    cpSync(join(repoRoot, 'package-lock.json'), join(app, 'package-lock.json'));
    const install = stage.find((l) => l.startsWith('RUN npm ci'));
    expect(install, 'the final stage installs with npm ci').toBeDefined();
    const npmArgs = install!.slice('RUN '.length).split('&&')[0]!.trim().split(/\s+/).slice(1);
    expect(npmArgs).toEqual(expect.arrayContaining(['ci', '--omit=dev', '--ignore-scripts']));
    // The main `npm ci` filled the cache with the same lockfile: prefer it to the network.
    const npm = spawnSync('npm', [...npmArgs, '--prefer-offline'], { cwd: app, encoding: 'utf8', timeout: 240_000 });
    expect(npm.status, npm.stderr).toBe(0);
    // COPY --from=build /app/<path> ./<path>: the same paths from this checkout (dist/ui is built by the test setup).
    const copies = stage.filter((l) => l.startsWith('COPY --from=build '));
    expect(copies.length).toBeGreaterThan(0);
    for (const line of copies) {
      const [, src, dest] = /^COPY --from=build \/app\/(\S+) \.\/(\S+)$/.exec(line) ?? [];
      expect(src, line).toBeDefined();
      cpSync(join(repoRoot, src!), join(app, dest!), { recursive: true });
    }
    // The build stage's `npm ci` runs `prepare`, which compiles dist/server: compiled here from this
    // checkout's sources, so a missing or stale dist/server in the checkout does not matter.
    expect(copies).toContain('COPY --from=build /app/dist ./dist');
    rmSync(join(app, 'dist/server'), { recursive: true, force: true });
    buildServer(join(app, 'dist/server'));
    const [bin, ...entry] = jsonArray('ENTRYPOINT');
    expect(bin).toBe('node');
    const cmd = jsonArray('CMD');
    // The image's own settings, with a free port and a private data dir instead of 8500 and /data.
    const env = { ...process.env, ...envOf(), ROSTER_DATA_DIR: data, ROSTER_HTTP_HOST: '127.0.0.1', ROSTER_HTTP_PORT: '0', ROSTER_GRPC_PORT: '0' };
    expect(envOf().ROSTER_DATA_DIR).toBe('/data');
    const proc = spawn(process.execPath, [...entry, ...cmd], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    agent = proc;
    let out = '';
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the image's agent was not ready in 60 s:\n${out}`)), 60_000);
      const onData = (d: Buffer) => {
        out += d.toString();
        const m = /roster listening http=(http:\/\/[^\s"]+)/.exec(out);
        if (m) { clearTimeout(timer); resolve(m[1]!); }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the image's agent exited (${code}):\n${out}`)); });
    });
  }, 300_000);

  afterAll(async () => {
    if (agent !== undefined && agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((r) => agent!.once('exit', r));
      agent.kill('SIGTERM');
      await exited;
    }
    rmSync(app, { recursive: true, force: true });
    rmSync(data, { recursive: true, force: true });
  });

  test('ENTRYPOINT + CMD start the agent from runtime dependencies alone; it serves the API and the dashboard', async () => {
    const put = await fetch(`${url}/v1/kv/image/check`, { method: 'PUT', body: 'ok' });
    expect(put.status).toBe(200);
    const get = await fetch(`${url}/v1/kv/image/check?raw`);
    expect(await get.text()).toBe('ok');
    const ui = await fetch(`${url}/ui/`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toMatch(/text\/html/);
    expect(await ui.text()).toMatch(/<div id=|<script/);
  });

  test('the roster command runs from the same files (kv get through ROSTER_HTTP_ADDR)', () => {
    const [, ...entry] = jsonArray('ENTRYPOINT');
    const r = spawnSync(process.execPath, [...entry, 'kv', 'get', 'image/check'], {
      cwd: app, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ROSTER_HTTP_ADDR: url },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('ok\n');
  });
});

describe('deploy/compose.yaml and deploy/roster.service', () => {
  test('every ROSTER_* variable they set is one the agent reads (roster agent --help lists them)', () => {
    const help = spawnSync(process.execPath, [join(repoRoot, 'bin/roster.mjs'), 'agent', '--help'], { encoding: 'utf8', timeout: 30_000 });
    expect(help.status, help.stderr).toBe(0);
    const known = new Set(help.stdout.match(/ROSTER_[A-Z_]+/g) ?? []);
    expect(known.size).toBeGreaterThan(5);
    for (const file of ['deploy/compose.yaml', 'deploy/roster.service', 'Dockerfile']) {
      const used = new Set(readFileSync(join(repoRoot, file), 'utf8').match(/ROSTER_[A-Z_]+(?=[:=])/g) ?? []);
      expect(used.size, `${file} sets ROSTER_* variables`).toBeGreaterThan(0);
      expect([...used].filter((v) => !known.has(v)), file).toEqual([]);
    }
  });

  test('the systemd unit and the compose services start the agent through bin/roster.mjs agent', () => {
    expect(readFileSync(join(repoRoot, 'deploy/roster.service'), 'utf8')).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/roster\/bin\/roster\.mjs agent /m);
    expect(jsonArray('ENTRYPOINT')).toEqual(['node', 'bin/roster.mjs']);
    expect(jsonArray('CMD')).toEqual(['agent']);
    const compose = readFileSync(join(repoRoot, 'deploy/compose.yaml'), 'utf8');
    expect(compose).toMatch(/build: \.\./);
    for (const n of [1, 2, 3]) expect(compose).toMatch(new RegExp(`roster${n}:[\\s\\S]*ROSTER_NODE_NAME: roster${n}`));
  });
});
