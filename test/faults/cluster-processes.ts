/**
 * The processes of the fault tests' cluster: a nats-server and a Roster node, each of which can be
 * killed, paused (nats-server) and started again with the same ports, store and data dir. Signalled by
 * pid, never by name.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { allThreadsStopped, natsServerBinary } from '../../cluster/dev/nats-launcher.ts';
import { startAgent, type Agent } from '../support/agent.ts';


/** One nats-server that can be killed, paused and started again with the same ports and store. */
export class NatsNode {
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private out = '';
  private paused = false;

  constructor(readonly name: string, readonly clientPort: number, readonly clusterPort: number, readonly monitorPort: number, readonly conf: string) {}

  get url(): string { return `nats://127.0.0.1:${this.clientPort}`; }
  get monitorUrl(): string { return `http://127.0.0.1:${this.monitorPort}`; }
  get pid(): number | undefined { return this.running() ? this.proc!.pid : undefined; }
  running(): boolean { return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null; }
  isPaused(): boolean { return this.paused && this.running(); }
  output(): string { return this.out; }

  /** Starts the server and waits for /healthz (a server whose JetStream peers are down may take longer). */
  async start(readyMs = 30_000): Promise<void> {
    if (this.running()) return;
    const proc = spawn(natsServerBinary(), ['-c', this.conf, '-js'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    this.paused = false;
    const keep = (d: Buffer): void => {
      this.out += d.toString();
      if (this.out.length > 200_000) this.out = this.out.slice(-100_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    this.exited = new Promise((res) => proc.once('exit', () => res()));
    const deadline = Date.now() + readyMs;
    while (Date.now() < deadline) {
      if (!this.running()) throw new Error(`nats-server ${this.name} exited during start:\n${this.out.slice(-4000)}`);
      try {
        if ((await fetch(`${this.monitorUrl}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok) return;
      } catch { /* not yet */ }
      await sleep(50);
    }
    throw new Error(`nats-server ${this.name} not healthy after ${readyMs} ms:\n${this.out.slice(-4000)}`);
  }

  /** SIGKILL (a crash) and wait for the exit. */
  async kill(): Promise<void> {
    if (!this.running()) return;
    this.proc!.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM and wait for the exit. */
  async stop(): Promise<void> {
    if (!this.running()) return;
    if (this.paused) this.resume();
    this.proc!.kill('SIGTERM');
    await this.exited;
  }

  /** SIGSTOP, resolving once every thread is stopped: a server that hangs with its sockets open. */
  async pause(): Promise<void> {
    if (!this.running()) return;
    this.proc!.kill('SIGSTOP');
    this.paused = true;
    for (let k = 0; k < 5_000 && this.running() && !allThreadsStopped(this.proc!.pid!); k++) await sleep(1);
  }

  resume(): void {
    if (!this.running()) return;
    this.proc!.kill('SIGCONT');
    this.paused = false;
  }

  /** The names of the clients connected to this server (Roster nodes connect as `roster-<node>`). */
  async clientNames(): Promise<string[]> {
    if (!this.running() || this.paused) return [];
    try {
      const res = await fetch(`${this.monitorUrl}/connz?limit=1024`, { signal: AbortSignal.timeout(2_000) });
      const body = await res.json() as { connections?: { name?: string }[] };
      return (body.connections ?? []).map((c) => c.name ?? '');
    } catch {
      return [];
    }
  }
}

// ---- Roster node ----------------------------------------------------------------------------

/** Starts of a Roster node tried before giving up. */
const startAttemptsMax = 3;

export class RosterNode {
  agent: Agent | undefined;
  /** How many times this node was started. */
  starts = 0;
  /** How many times kill() or stop() was called: bumped before the signal, so an answer can tell it came from before. */
  stops = 0;
  /** True while start() is running (a supervisor leaves such a node alone). */
  starting = false;
  /** performance.now() when the current incarnation answered ready, if an earlier one did too (else -Infinity). */
  restartedAtMs = -Infinity;
  private readyOnce = false;
  /** Output of earlier incarnations (the newest at the end), for a failure report. */
  private history = '';

  constructor(readonly name: string, readonly httpPort: number, readonly gossipPort: number, readonly dataDir: string,
    private readonly argsOf: (node: RosterNode) => string[]) {}

  get url(): string { return `http://127.0.0.1:${this.httpPort}`; }
  running(): boolean { return this.agent !== undefined && this.agent.proc.exitCode === null && this.agent.proc.signalCode === null; }
  get pid(): number | undefined { return this.running() ? this.agent!.proc.pid : undefined; }

  /**
   * Starts the node as a process supervisor would: a start that exits before it is ready (its log could
   * not open while the nats-servers restart, or it stopped on a changed stream, exit 70) or is not ready
   * in time (it is then killed) is tried again, up to {@link startAttemptsMax} times.
   */
  async start(): Promise<void> {
    if (this.running() || this.starting) return;
    this.starting = true;
    try {
      for (let attempt = 1; ; attempt++) {
        if (this.agent !== undefined) this.history += this.agent.output();
        this.agent = undefined;
        this.starts++;
        try {
          this.agent = await startAgent({ bare: true, dataDir: this.dataDir, args: this.argsOf(this), readyTimeoutMs: 60_000 });
          if (this.readyOnce) this.restartedAtMs = performance.now();
          this.readyOnce = true;
          return;
        } catch (err) {
          this.history += `\n[harness] start ${attempt} of ${this.name} failed: ${(err as Error).message}\n`;
          if (attempt >= startAttemptsMax) throw err;
          await sleep(1_000);
        }
      }
    } finally {
      this.starting = false;
    }
  }

  /** The exit code (or signal) of the last incarnation, if it ended. */
  lastExit(): string | undefined {
    const p = this.agent?.proc;
    if (p === undefined || (p.exitCode === null && p.signalCode === null)) return undefined;
    return p.exitCode !== null ? String(p.exitCode) : String(p.signalCode);
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<void> {
    this.stops++;
    if (this.running()) await this.agent!.kill9();
  }

  /** SIGTERM and wait for the exit. */
  async stop(): Promise<void> {
    this.stops++;
    if (this.running()) await this.agent!.stop();
  }

  output(): string {
    return this.history + (this.agent?.output() ?? '');
  }
}
