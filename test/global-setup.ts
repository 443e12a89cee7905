/**
 * Vitest global setup: install the Debian tools the tests run before any test file starts.
 *   - nats-server (DESIGN §6: Debian's 2.9.10): the cluster tests start real servers;
 *   - nft (package nftables): the fault tests cut loopback ports apart for partitions;
 *   - faketime (package faketime, with libfaketime): the clock-skew fault test runs a node on a skewed clock;
 *   - python3-prometheus-client: the metrics test parses the Prometheus output with the Prometheus
 *     project's own parser, run by Debian's /usr/bin/python3;
 *   - chromium: the dashboard's browser test drives Debian's Chromium headless through playwright-core.
 * Each binary is looked up on PATH (and in /usr/sbin, /usr/bin), the Python module by importing it; when
 * some are missing and this is root, one `apt-get update && apt-get install -y <packages>` installs them;
 * otherwise the run stops with the command to run.
 * Then the dashboard is built (`npm run build:ui`) when dist/ui is missing or older than a file under ui/,
 * so no test serves a stale build.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { debianPython, parserModule } from './support/prometheus.ts';

interface Tool { what: string; pkg: string; why: string; present(): boolean }

const binary = (name: string, pkg: string, why: string): Tool => ({ what: name, pkg, why, present: () => find(name) !== undefined });

const tools: Tool[] = [
  binary('nats-server', 'nats-server', 'the cluster tests start real nats-server processes (2.9.10 is what they expect)'),
  binary('nft', 'nftables', 'the partition fault tests add nftables rules on loopback'),
  binary('faketime', 'faketime', 'the clock-skew fault test runs a node under libfaketime'),
  {
    what: `${debianPython} -c "import ${parserModule}"`, pkg: 'python3-prometheus-client',
    why: 'the metrics test parses the Prometheus output with the official Python client\'s parser',
    present: () => existsSync(debianPython) && spawnSync(debianPython, ['-c', `import ${parserModule}`], { stdio: 'ignore', timeout: 60_000 }).status === 0,
  },
  binary('chromium', 'chromium', 'the dashboard test (test/ui) drives Chromium headless'),
];

function find(binary: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin'];
  for (const dir of dirs) {
    if (dir !== '' && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return undefined;
}

export default function setup(): void {
  installTools();
  buildDashboard();
}

function installTools(): void {
  const missing = tools.filter((t) => !t.present());
  if (missing.length === 0) return;
  const pkgs = missing.map((t) => t.pkg);
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) {
    throw new Error(`missing: ${missing.map((t) => `${t.what} (${t.why})`).join('; ')}. This is not root, so they cannot be `
      + `installed here: run \`sudo apt-get install -y ${pkgs.join(' ')}\` (Debian).`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update'], { stdio: 'inherit', env, timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', ...pkgs], { stdio: 'inherit', env, timeout: 300_000 });
  } catch (err) {
    throw new Error(`\`apt-get install -y ${pkgs.join(' ')}\` failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const still = missing.filter((t) => !t.present());
  if (still.length > 0) throw new Error(`apt-get installed ${pkgs.join(' ')} but ${still.map((t) => t.what).join(', ')} is still missing`);
}

const repoRoot = resolve(import.meta.dirname, '..');

/** Newest modification time of the files under a directory (0 when it does not exist). */
function newestMs(dir: string): number {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** `npm run build:ui` when dist/ui/index.html is missing or older than any source of the dashboard. */
function buildDashboard(): void {
  const built = join(repoRoot, 'dist/ui/index.html');
  if (existsSync(built) && statSync(built).mtimeMs >= newestMs(join(repoRoot, 'ui'))) return;
  try {
    execFileSync(process.execPath, [join(repoRoot, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'ui/vite.config.ts'],
      { cwd: repoRoot, stdio: 'inherit', timeout: 120_000 });
  } catch (err) {
    throw new Error(`building the dashboard (npm run build:ui) failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
