/**
 * Server CPU for bench:compare: user + system time of the server processes, read from `/proc/<pid>/stat`
 * at the start and at the end of a row's measured window, and the bench's own CPU (the load generator) over
 * the same span from process.cpuUsage(), kept apart. A process's stat counts every one of its threads.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** Clock ticks per second, the unit of /proc's times: `getconf CLK_TCK`, 100 where that cannot be asked. */
function ticksPerSecond(): number {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5_000 }).trim());
    return Number.isInteger(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

let ticks: number | undefined;

/**
 * User + system CPU seconds `pid` has used so far. Throws when its stat cannot be read (the process is
 * gone, or this is not Linux): a row must not report a figure it could not measure.
 */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name in parentheses may hold spaces; the fields after it are: state (3), ppid (4), … utime (14), stime (15).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`/proc/${pid}/stat: no utime and stime in ${JSON.stringify(stat.slice(0, 200))}`);
  ticks ??= ticksPerSecond();
  return (utime + stime) / ticks;
}

interface Sample { at: number; server: number; client: number; byRole: Record<string, number> }

/** Some of the server processes under a name ('nodes', 'nats-servers'), whose CPU is also told apart. */
export type ServerRoles = Readonly<Record<string, readonly number[]>>;

/** What one row's window cost: server and client CPU seconds over `spanS` seconds of wall time. */
export interface WindowCpu {
  /** How many server processes were counted. */
  processes: number;
  spanS: number;
  serverCpuS: number;
  clientCpuS: number;
  /** The server CPU seconds of each role's processes, when roles were given. */
  byRoleS?: Record<string, number>;
}

/**
 * Samples the CPU of `pids` (each role's apart too, and this process's) when a row's window opens and when it closes, by timers
 * set from the window's times; finish() takes the closing sample itself when the row ended first.
 */
export class WindowMeter {
  private start: Sample | undefined;
  private end: Sample | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private failure: unknown;

  constructor(private readonly pids: readonly number[], private readonly roles: ServerRoles = {}) {}

  private sample(): Sample {
    const each = new Map(this.pids.map((pid) => [pid, cpuSecondsOf(pid)]));
    const server = [...each.values()].reduce((n, s) => n + s, 0);
    const byRole = Object.fromEntries(Object.entries(this.roles).map(([role, pids]) => [role, pids.reduce((n, pid) => n + (each.get(pid) ?? cpuSecondsOf(pid)), 0)]));
    const own = process.cpuUsage();
    return { at: performance.now(), server, client: (own.user + own.system) / 1e6, byRole };
  }

  private take(which: 'start' | 'end'): void {
    try {
      this[which] = this.sample();
    } catch (err) {
      this.failure ??= err;
    }
  }

  /** For RowOptions.onWindow: `from` and `until` are performance.now() times. */
  readonly onWindow = (from: number, until: number): void => {
    const now = performance.now();
    this.timers.push(setTimeout(() => this.take('start'), Math.max(0, from - now)));
    this.timers.push(setTimeout(() => this.take('end'), Math.max(0, until - now)));
  };

  /** The window's figures; throws when a process could not be read or the window never opened. */
  finish(): WindowCpu {
    for (const t of this.timers) clearTimeout(t);
    if (this.end === undefined && this.start !== undefined) this.take('end');
    if (this.failure !== undefined) throw this.failure instanceof Error ? this.failure : new Error(String(this.failure));
    if (this.start === undefined || this.end === undefined) throw new Error('the row ended before its measured window opened');
    return {
      processes: this.pids.length,
      spanS: (this.end.at - this.start.at) / 1000,
      serverCpuS: this.end.server - this.start.server,
      clientCpuS: this.end.client - this.start.client,
      ...(Object.keys(this.roles).length > 0
        ? { byRoleS: Object.fromEntries(Object.keys(this.roles).map((role) => [role, this.end!.byRole[role]! - this.start!.byRole[role]!])) }
        : {}),
    };
  }
}
