/**
 * What the comparison needs from the machine: Debian binaries (etcd, wrk) found on PATH or where Debian
 * puts them, installed with apt-get when missing and running as root (as test/global-setup.ts does for
 * nats-server); the machine's description for the header; and a child process kept on a short leash.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statfsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { NatsCluster } from '../../cluster/dev/nats-launcher.ts';

/** apt-get update + install may download; bounded so a dead mirror does not hang the bench. */
const aptTimeoutMs = 300_000;

function onPath(binary: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/sbin']) {
    if (dir !== '' && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return undefined;
}

/**
 * The path of `binary`; when it is missing and this is root, `apt-get install -y <debianPackage>` first.
 * Throws with what to run otherwise.
 */
export function debianBinary(binary: string, debianPackage: string): string {
  const found = onPath(binary);
  if (found !== undefined) return found;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) {
    throw new Error(`${binary} is not installed (not on PATH, /usr/bin or /usr/sbin) and this is not root, so the bench cannot `
      + `install it: run \`sudo apt-get install -y ${debianPackage}\` (Debian), or leave this system out with --systems`);
  }
  process.stderr.write(`bench: ${binary} is missing, installing the Debian package ${debianPackage}\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: aptTimeoutMs });
  execFileSync('apt-get', ['install', '-y', debianPackage], { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: aptTimeoutMs });
  const installed = onPath(binary);
  if (installed === undefined) throw new Error(`apt-get installed ${debianPackage} but no ${binary} binary is on PATH, /usr/bin or /usr/sbin`);
  return installed;
}

const fsTypes: Record<number, string> = {
  0xef53: 'ext4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x01021994: 'tmpfs', 0x794c7630: 'overlayfs',
  0x2fc12fc1: 'zfs', 0x65735546: 'fuse', 0x6969: 'nfs', 0xf15f: 'ecryptfs', 0x858458f6: 'ramfs',
};

/** The file system a directory lives on: fdatasync costs almost nothing on tmpfs, so it matters. */
export function fsTypeOf(dir: string): string {
  try {
    const type = statfsSync(dir).type;
    return fsTypes[type] ?? `0x${type.toString(16)}`;
  } catch {
    return 'unknown';
  }
}

export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  platform: string;
  dataParent: string;
  dataFs: string;
}

export function describeMachine(dataParent: string): Machine {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown', cores: cpu.length, node: process.version,
    platform: `${process.platform}/${process.arch}`, dataParent, dataFs: fsTypeOf(dataParent),
  };
}

/** After SIGTERM, how long a process gets before SIGKILL. */
const stopTimeoutMs = 10_000;

/** A started process: its output's tail, whether it exited, and a stop by its own pid. */
export interface Child {
  readonly proc: ChildProcess;
  output(): string;
  /** Set once it exited, with its code or signal. */
  exited(): string | undefined;
  /** Resolves on exit. */
  readonly exit: Promise<void>;
  /** SIGTERM (SIGKILL after 10 s) and wait for the exit; nothing when it already exited. */
  stop(): Promise<void>;
}

export function startChild(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Child {
  const proc = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => { out = (out + d.toString()).slice(-16_384); };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  let exitedWith: string | undefined;
  const exit = new Promise<void>((res) => {
    proc.once('exit', (code, signal) => { exitedWith = code !== null ? `exit code ${code}` : `signal ${signal}`; res(); });
    // A spawn that failed (ENOENT) emits error and then no exit event.
    proc.once('error', (err) => { exitedWith ??= `spawn failed: ${err.message}`; res(); });
  });
  return {
    proc, exit,
    output: () => out,
    exited: () => exitedWith,
    stop: async () => {
      if (exitedWith !== undefined || proc.pid === undefined) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), stopTimeoutMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** A nats-server of `c` that stopped, with its output's tail, or undefined while all run. */
export function stoppedNatsServer(c: Pick<NatsCluster, 'servers'>): string | undefined {
  const gone = c.servers.find((s) => !s.running());
  return gone === undefined ? undefined : `nats-server ${gone.name} stopped:\n${gone.output().slice(-3000)}`;
}
