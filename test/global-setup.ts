/**
 * Vitest global setup: the cluster tests start real nats-server processes (DESIGN §6: Debian's
 * nats-server 2.9.10). Make sure one is installed before any test file runs: on PATH or at
 * /usr/sbin/nats-server, else, when running as root, `apt-get update && apt-get install -y nats-server`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const debianBinary = '/usr/sbin/nats-server';

function findNatsServer(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  }
  return existsSync(debianBinary) ? debianBinary : undefined;
}

function install(): void {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'inherit', env, timeout: 300_000 });
  execFileSync('apt-get', ['install', '-y', 'nats-server'], { stdio: 'inherit', env, timeout: 300_000 });
}

export default function setup(): void {
  if (findNatsServer() !== undefined) return;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) {
    throw new Error('nats-server is not installed (not on PATH nor at /usr/sbin/nats-server) and this is not root, '
      + 'so it cannot be installed here: run `sudo apt-get install -y nats-server` (Debian; 2.9.10 is what the cluster tests expect).');
  }
  try {
    install();
  } catch (err) {
    throw new Error(`nats-server is missing and \`apt-get install -y nats-server\` failed: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err });
  }
  if (findNatsServer() === undefined) {
    throw new Error('apt-get installed nats-server but no nats-server binary is on PATH or at /usr/sbin/nats-server');
  }
}
