/**
 * What `/v1/agent/host` tells of the machine and process an agent runs on, in the shape of Consul's answer
 * (gopsutil's field names: Memory, CPU, Host, Disk of the data dir, CollectionTime in nanoseconds,
 * Errors), and a `Process` part of Roster's own: its pid, Node.js version, uptime, memory, and open files
 * against their limit — what an operator asks first when writes are refused for want of descriptors or
 * disk. A part that cannot be read is left out and named in Errors.
 */
import { readdir, readFile, statfs } from 'node:fs/promises';
import * as os from 'node:os';
import { softDescriptorLimit } from '../util/descriptor-limit.ts';

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100);

function memory(): Record<string, number> {
  const total = os.totalmem();
  const available = os.freemem();
  return { total, available, used: total - available, usedPercent: percent(total - available, total) };
}

function cpus(): Record<string, unknown>[] {
  return os.cpus().map((c, i) => ({ cpu: i, modelName: c.model, mhz: c.speed, cores: 1 }));
}

/** ID and VERSION_ID of /etc/os-release (debian, 12), when it is there. */
async function distribution(): Promise<{ platform: string; platformVersion: string }> {
  const text = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const field = (name: string) => new RegExp(`^${name}="?([^"\\n]*)"?$`, 'm').exec(text)?.[1] ?? '';
  return { platform: field('ID'), platformVersion: field('VERSION_ID') };
}

async function host(): Promise<Record<string, unknown>> {
  const uptime = Math.round(os.uptime());
  return {
    hostname: os.hostname(), uptime, bootTime: Math.round(Date.now() / 1000) - uptime, os: os.platform(),
    ...await distribution(), kernelVersion: os.release(), kernelArch: os.machine(), loadAverage: os.loadavg(),
  };
}

async function disk(path: string): Promise<Record<string, unknown>> {
  const s = await statfs(path);
  const total = s.blocks * s.bsize;
  const free = s.bavail * s.bsize;
  const used = (s.blocks - s.bfree) * s.bsize;
  const inodesUsed = s.files - s.ffree;
  return {
    path, total, free, used, usedPercent: percent(used, used + free),
    inodesTotal: s.files, inodesFree: s.ffree, inodesUsed, inodesUsedPercent: percent(inodesUsed, s.files),
  };
}

async function processPart(): Promise<Record<string, unknown>> {
  const m = process.memoryUsage();
  const openFiles = await readdir('/proc/self/fd').then((fds) => fds.length, () => null);
  return {
    pid: process.pid, nodeVersion: process.version, uptimeSeconds: Math.round(process.uptime()),
    rssBytes: m.rss, heapUsedBytes: m.heapUsed, openFiles, openFilesLimit: softDescriptorLimit() ?? null,
  };
}

export async function hostInfo(dataDir: string): Promise<Record<string, unknown>> {
  const errors: string[] = [];
  const part = async <T>(name: string, read: () => Promise<T> | T): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      errors.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };
  const [Memory, CPU, Host, Disk, Process] = await Promise.all([
    part('memory', memory), part('cpu', cpus), part('host', host), part('disk', () => disk(dataDir)), part('process', processPart),
  ]);
  return { Memory, CPU, Host, Disk, Process, CollectionTime: Date.now() * 1_000_000, Errors: errors };
}
