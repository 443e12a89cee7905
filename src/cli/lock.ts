/**
 * `roster lock <prefix> -- <command> [args...]`, as `consul lock` does it: a session with a TTL
 * (renewed every TTL/2) takes the lock key `<prefix>/.lock`, waiting for it on the agent (a queued
 * acquire: the agent answers when the lock is ours or the wait ran out, so there is no retry loop),
 * then runs the command. SIGINT, SIGTERM and SIGHUP are forwarded to it. When it exits the lock is
 * released and the session destroyed, and `roster lock` exits with its code (128+n for signal n).
 * If the lock is lost while it runs (the session invalidated or not renewed for a TTL, the key taken
 * or deleted), the command is stopped (SIGTERM, then SIGKILL after a grace period) and we exit 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { parseGoDurationMs } from '../util/duration.ts';
import { failureOf, keyPath, requestTimeoutMs, type Answer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, exitCodes, usageError } from './errors.ts';
import type { KvEntry } from './kv.ts';
import { spinner } from './output.ts';

export interface LockOptions {
  /** How long to wait for the lock; 0 waits for ever. @default "0" */
  timeout?: string;
  /** Session TTL. @default "15s" */
  ttl?: string;
  /** Session name. @default "roster lock <key>" */
  name?: string;
}

/** Consul's flags value for a lock key (its api.LockFlagValue), so Consul's own clients know the key for a lock. */
const lockFlagValue = '3304740253564472344';
/** One queued acquire waits on the agent at most this long; then we ask again (and notice a lost session). */
const acquireWaitChunkMs = 30_000;
/** One blocking read of the lock key (watching that we still hold it) waits at most this long. */
const monitorWaitMs = 30_000;
/** After a failed or early-returning request, wait this long before the next one: never a hot loop. */
const retryPauseMs = 1_000;
/** A command still running this long after SIGTERM (the lock was lost) gets SIGKILL. */
const killGraceMs = 5_000;
const forwardedSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type Forwarded = (typeof forwardedSignals)[number];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

function durationMs(flag: string, text: string, zeroAllowed: boolean): number {
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms < 0 || (!zeroAllowed && ms === 0)) throw usageError(`${flag}: "${text}" is not a ${zeroAllowed ? '' : 'positive '}duration such as 15s`);
  return ms;
}

export async function lockCommand(ctx: CliContext, prefix: string, command: string[], o: LockOptions): Promise<number> {
  const trimmed = prefix.replace(/\/+$/, '');
  if (trimmed === '') throw usageError('a key prefix is required');
  if (command.length === 0 || command[0] === '') throw usageError('a command to run is required: roster lock <prefix> -- <command> [args...]');
  const ttl = o.ttl ?? '15s';
  const ttlMs = durationMs('--ttl', ttl, false);
  const timeoutMs = durationMs('--timeout', o.timeout ?? '0', true);
  const run = new LockRun(ctx, `${trimmed}/.lock`, ttl, ttlMs, timeoutMs, o.timeout);
  return run.go(command, o.name);
}

class LockRun {
  private sessionId: string | undefined;
  private child: ChildProcess | undefined;
  private signalled: Forwarded | undefined;
  private lostReason: string | undefined;
  private lastRenewMs = Date.now();
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing = false;
  /** Aborts the wait for the lock (a signal, a lost session) and the monitor's blocking read. */
  private readonly waiting = new AbortController();
  private readonly monitoring = new AbortController();
  private readonly onSignal = (signal: Forwarded) => this.signal(signal);

  constructor(
    private readonly ctx: CliContext,
    private readonly key: string,
    private readonly ttl: string,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    private readonly timeoutText: string | undefined,
  ) {}

  async go(command: string[], name: string | undefined): Promise<number> {
    for (const s of forwardedSignals) process.on(s, this.onSignal);
    try {
      this.sessionId = await this.createSession(name ?? `roster lock ${this.key}`);
      this.renewTimer = setInterval(() => void this.renew(), this.ttlMs / 2);
      const index = await this.acquire();
      if (index === 'signalled') return signalExitCode(this.signalled!);
      void this.monitor(index);
      const exit = await this.runChild(command, index);
      this.stopKeeping();
      if (this.lostReason !== undefined) throw new CliError(`lock lost: ${this.lostReason}; the command was stopped`);
      await this.release();
      return exit;
    } finally {
      this.stopKeeping();
      for (const s of forwardedSignals) process.off(s, this.onSignal);
      await this.destroySession();
    }
  }

  private signal(signal: Forwarded): void {
    if (this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill(signal);
      return;
    }
    this.signalled ??= signal;
    this.waiting.abort();
  }

  private lose(reason: string): void {
    if (this.lostReason !== undefined) return;
    this.lostReason = reason;
    this.waiting.abort();
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    this.ctx.stderr.write(`roster: lock lost: ${reason}; stopping the command\n`);
    child.kill('SIGTERM');
    const force = setTimeout(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); }, killGraceMs);
    force.unref();
    child.once('exit', () => clearTimeout(force));
  }

  private async createSession(name: string): Promise<string> {
    const a = await this.ctx.client.put('/v1/session/create', { body: { Name: name, TTL: this.ttl, Behavior: 'release' } });
    if (a.status !== 200) throw new CliError(`could not create a session: ${failureOf(a).message}`);
    return a.json<{ ID: string }>().ID;
  }

  /** Renews the session; it is lost when the agent no longer knows it or no renew got through for a TTL. */
  private async renew(): Promise<void> {
    if (this.renewing || this.sessionId === undefined) return;
    this.renewing = true;
    try {
      const a = await this.ctx.client.put(`/v1/session/renew/${encodeURIComponent(this.sessionId)}`, { timeoutMs: this.ttlMs / 2 });
      if (a.status === 200) this.lastRenewMs = Date.now();
      else if (a.status === 404) this.lose(`session ${this.sessionId} was invalidated`);
    } catch { /* the agent did not answer: counted below */ } finally {
      this.renewing = false;
    }
    if (Date.now() - this.lastRenewMs > this.ttlMs) this.lose(`the session could not be renewed for ${this.ttl}`);
  }

  /** Waits for the lock; its index (the fencing token), or 'signalled' when interrupted first. */
  private async acquire(): Promise<number | 'signalled'> {
    const deadline = this.timeoutMs > 0 ? Date.now() + this.timeoutMs : Number.POSITIVE_INFINITY;
    const spin = spinner(`waiting for lock ${this.key}`, this.ctx.stderr);
    try {
      for (;;) {
        if (this.signalled !== undefined) return 'signalled';
        if (this.lostReason !== undefined) throw new CliError(`did not acquire lock "${this.key}": ${this.lostReason}`);
        const chunkMs = Math.max(0, Math.min(deadline - Date.now(), acquireWaitChunkMs));
        const started = Date.now();
        let a: Answer;
        try {
          a = await this.ctx.client.put(`/v1/kv/${keyPath(this.key)}`, {
            query: { acquire: this.sessionId, flags: lockFlagValue, wait: `${Math.round(chunkMs)}ms` },
            timeoutMs: chunkMs + requestTimeoutMs, signal: this.waiting.signal,
          });
        } catch (err) {
          if (this.waiting.signal.aborted) continue; // signalled or lost: the loop's head says which
          throw err;
        }
        if (a.status === 200 && a.text.trim() === 'true') return a.index ?? 0;
        const refused = (a.status === 200 && a.text.trim() === 'false') || a.status === 409;
        if (!refused) throw new CliError(`could not acquire lock "${this.key}": ${failureOf(a).message}`);
        if (Date.now() >= deadline) {
          throw new CliError(`did not acquire lock "${this.key}"${this.timeoutText !== undefined ? ` within ${this.timeoutText}` : ''}`);
        }
        // An agent that does not queue acquires answers at once: pause rather than spin.
        if (Date.now() - started < chunkMs / 2) await sleep(Math.min(retryPauseMs, Math.max(0, deadline - Date.now())));
      }
    } finally {
      spin.stop();
    }
  }

  /** Blocking reads of the lock key while the command runs: it is lost when the key is no longer ours. */
  private async monitor(fromIndex: number): Promise<void> {
    let index = fromIndex;
    while (!this.monitoring.signal.aborted && this.lostReason === undefined) {
      let a: Answer;
      try {
        a = await this.ctx.client.get(`/v1/kv/${keyPath(this.key)}`, {
          query: { index, wait: `${monitorWaitMs}ms` }, timeoutMs: monitorWaitMs + requestTimeoutMs, signal: this.monitoring.signal,
        });
      } catch {
        if (this.monitoring.signal.aborted) return;
        await sleep(retryPauseMs); // the agent is away: renew() decides when the session counts as lost
        continue;
      }
      if (this.monitoring.signal.aborted) return;
      if (a.status === 404) { this.lose(`the lock key ${this.key} was deleted`); return; }
      if (a.status !== 200) { await sleep(retryPauseMs); continue; }
      const entry = a.json<KvEntry[]>()[0];
      if (entry?.Session !== this.sessionId) { this.lose(`the lock ${this.key} is no longer held by session ${this.sessionId}`); return; }
      index = a.index ?? index;
    }
  }

  /** Runs the command; resolves with the exit code to report (the child's, 128+n for a signal). */
  private runChild(command: string[], index: number): Promise<number> {
    const [file, ...args] = command.length === 1 ? ['sh', '-c', command[0]!] : command;
    return new Promise((resolve) => {
      const child = spawn(file!, args, {
        stdio: 'inherit',
        env: { ...this.ctx.env, ROSTER_LOCK_KEY: this.key, ROSTER_LOCK_SESSION: this.sessionId!, ROSTER_LOCK_INDEX: String(index) },
      });
      this.child = child;
      child.once('error', (err: NodeJS.ErrnoException) => {
        // The command could not be started (it never ran): the shell's codes for not found / not executable.
        this.ctx.stderr.write(`roster: cannot run ${file}: ${err.message}\n`);
        resolve(err.code === 'ENOENT' ? 127 : err.code === 'EACCES' ? 126 : exitCodes.failed);
      });
      child.once('exit', (code, signal) => resolve(code ?? signalExitCode(signal!)));
      // A signal that came while we were still acquiring goes to the command as soon as it exists.
      if (this.signalled !== undefined) child.kill(this.signalled);
    });
  }

  private stopKeeping(): void {
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    this.monitoring.abort();
  }

  private async release(): Promise<void> {
    try {
      const a = await this.ctx.client.put(`/v1/kv/${keyPath(this.key)}`, { query: { release: this.sessionId, flags: lockFlagValue } });
      if (a.status !== 200 || a.text.trim() !== 'true') this.ctx.stderr.write(`roster: could not release lock "${this.key}": ${failureOf(a).message}\n`);
    } catch (err) {
      this.ctx.stderr.write(`roster: could not release lock "${this.key}": ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }

  /** Best effort: a session left behind expires after its TTL and frees what it holds. */
  private async destroySession(): Promise<void> {
    const id = this.sessionId;
    if (id === undefined) return;
    this.sessionId = undefined;
    try {
      await this.ctx.client.put(`/v1/session/destroy/${encodeURIComponent(id)}`);
    } catch (err) {
      this.ctx.stderr.write(`roster: could not destroy session ${id} (it expires after its TTL): ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}
