// Goal (deployment): no container engine runs here, so the deployment files are checked as far
// as a machine without one can: the Dockerfile's final stage is rebuilt as a plain directory, step by
// step in its own order (its COPY lines; its `npm ci --omit=dev --ignore-scripts` and the binding prune,
// the prune run by the image's Node.js; dist/server compiled as the build stage compiles it), and its
// ENTRYPOINT + CMD are run from there by the image's Node.js (24, from the npm registry) on the image's
// glibc (Debian 13's, from Debian's archive) — the agent must start with the runtime dependencies and the
// one kept binding only, serve the API and the dashboard, and the `roster` command must work from the
// same files. Every ROSTER_* variable that deploy/compose.yaml and deploy/roster.service set must be one
// the agent reads.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { repoRoot } from '../support/agent.ts';
import { debianLibc, nodeBinary, nodeReleases, type Libc } from '../support/node-dist.ts';
import { buildServer } from './build-server.ts';

const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
const lines = dockerfile.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));

/** The instructions after the last FROM, one per line (no line continuations are used in this Dockerfile). */
function finalStage(): string[] {
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

/** Bytes under a path (files only, symlinks not followed). */
function sizeOf(path: string): number {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined || st.isSymbolicLink()) return 0;
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((sum, f) => sum + sizeOf(join(path, f)), 0);
}

/** One `&&` step of a RUN line, done in the directory: npm from the host's npm, `node` as the image's Node.js. */
function runStep(app: string, step: string, imageNode: string): void {
  const [cmd, ...args] = step.trim().split(/\s+/);
  // `npm cache clean` only shrinks the image's layer; here it would empty the host's cache.
  if (cmd === 'npm' && args[0] === 'cache') return;
  // The main `npm ci` filled the cache with the same lockfile: prefer it to the network.
  const r = cmd === 'npm'
    ? spawnSync('npm', [...args, '--prefer-offline'], { cwd: app, encoding: 'utf8', timeout: 240_000 })
    : cmd === 'node'
      ? spawnSync(imageNode, args, { cwd: app, encoding: 'utf8', timeout: 60_000 })
      : undefined;
  expect(r, `a RUN step this test does not know: ${step}`).toBeDefined();
  expect(r!.status, `${step}\n${r!.stdout}${r!.stderr}`).toBe(0);
}

/** The final stage's /app, rebuilt from this checkout in the Dockerfile's order. */
function rebuildFinalStage(app: string, imageNode: string): void {
  const stage = finalStage();
  expect(stage.some((l) => l.startsWith('RUN npm ci ') && l.includes('--omit=dev') && l.includes('--ignore-scripts'))).toBe(true);
  for (const line of stage) {
    const copy = /^COPY (--from=build )?(.+)$/.exec(line);
    if (copy !== null) {
      const parts = copy[2]!.split(/\s+/);
      const dest = join(app, parts.pop()!);
      for (const src of parts) {
        const from = join(repoRoot, copy[1] === undefined ? src : src.replace(/^\/app\//, ''));
        const to = dest.endsWith('/') ? join(dest, src.split('/').pop()!) : dest;
        mkdirSync(dirname(to), { recursive: true });
        cpSync(from, to, { recursive: true });
      }
    } else if (line.startsWith('RUN ') && !line.includes('/data')) {
      for (const step of line.slice(4).split('&&')) runStep(app, step, imageNode);
    }
  }
  // The build stage's `npm ci` runs `prepare`, which compiles dist/server: compiled here from this
  // checkout's sources, so a missing or stale dist/server in the checkout does not matter.
  expect(stage).toContain('COPY --from=build /app/dist ./dist');
  rmSync(join(app, 'dist/server'), { recursive: true, force: true });
  buildServer(join(app, 'dist/server'));
}

describe('the Dockerfile\'s final stage, rebuilt as a directory', () => {
  let app: string;
  let data: string;
  let agent: ReturnType<typeof spawn> | undefined;
  let url: string;
  let imageNode: string;
  let libc: Libc;

  beforeAll(async () => {
    // Both stages run the Node.js 24 the platform tests fetch, on Debian 13 (trixie).
    const froms = lines.filter((l) => l.startsWith('FROM '));
    expect(froms.map((l) => l.split(/\s+/)[1])).toEqual([`node:${nodeReleases[24]}-trixie-slim`, `node:${nodeReleases[24]}-trixie-slim`]);
    imageNode = nodeBinary(24);
    libc = debianLibc();
    app = mkdtempSync(join(tmpdir(), 'roster-image-'));
    data = mkdtempSync(join(tmpdir(), 'roster-image-data-'));
    rebuildFinalStage(app, imageNode);
    const [bin, ...entry] = jsonArray('ENTRYPOINT');
    expect(bin).toBe('node');
    const cmd = jsonArray('CMD');
    // The image's own settings, with a free port and a private data dir instead of 8500 and /data.
    const env = { ...process.env, ...envOf(), ROSTER_DATA_DIR: data, ROSTER_HTTP_HOST: '127.0.0.1', ROSTER_HTTP_PORT: '0', ROSTER_GRPC_PORT: '0' };
    expect(envOf().ROSTER_DATA_DIR).toBe('/data');
    const proc = spawn(libc.loader, ['--library-path', libc.libraryPath, imageNode, ...entry, ...cmd], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  }, 600_000);

  afterAll(async () => {
    if (agent !== undefined && agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((r) => agent!.once('exit', r));
      agent.kill('SIGTERM');
      await exited;
    }
    if (app !== undefined) rmSync(app, { recursive: true, force: true });
    if (data !== undefined) rmSync(data, { recursive: true, force: true });
  });

  test('ENTRYPOINT + CMD start the agent on Node.js 24 and glibc 2.41 from runtime dependencies alone; it serves the API and the dashboard', async () => {
    expect(libc.version).toBe('2.41');
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
    const r = spawnSync(imageNode, [...entry, 'kv', 'get', 'image/check'], {
      cwd: app, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ROSTER_HTTP_ADDR: url },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('ok\n');
  });

  test('the final stage keeps one native binding (the image\'s), no TypeScript toolchain, and stays under 100 MB', () => {
    const binding = join(app, 'node_modules/uWebSockets.js');
    expect(readdirSync(binding).filter((f) => f.endsWith('.node'))).toEqual(['uws_linux_x64_137.node']);
    for (const dev of ['tsx', 'typescript', 'esbuild', 'vite', 'vitest']) expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
    const mb = (p: string) => sizeOf(join(app, p)) / 1e6;
    const parts = { node_modules: mb('node_modules'), dist: mb('dist'), bin: mb('bin'), all: mb('.') };
    // The figure the README and docs/deployment.md report: what the final stage adds to its base image.
    console.log(`final stage /app: ${Object.entries(parts).map(([k, v]) => `${k} ${v.toFixed(1)} MB`).join(', ')}`);
    expect(parts.all).toBeLessThan(100);
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
