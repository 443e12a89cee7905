/**
 * `roster lock <prefix> -- <command> [args...]`, as `consul lock` does it: a session with a TTL
 * (renewed every TTL/2) takes the lock key `<prefix>/.lock` (or, with `-n N` above 1, a slot of the
 * semaphore at `<prefix>`: semaphore.ts), waiting for it on the agent, then runs the command. SIGINT,
 * SIGTERM and SIGHUP are forwarded to it. When it exits the lock is released and the session destroyed,
 * and `roster lock` exits with its code (128+n for signal n; 0 whatever it was with
 * `-child-exit-code=false`, as `consul lock` without the flag). If the lock is lost while it runs (the
 * session invalidated or not renewed for a TTL, the key taken or deleted, or watching it failed more than
 * `-monitor-retry` times in a row), the command is stopped (SIGTERM, then SIGKILL after a grace period)
 * and we exit 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { parseGoDurationMs } from '../util/duration.ts';
import { setLongInterval, setLongTimeout, type LongTimer } from '../util/timer.ts';
import { failureOf } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, exitCodes, usageError } from './errors.ts';
import { KeyLock, sleep, type Claim, type Held } from './lock-claim.ts';
import { spinner } from './output.ts';

export interface LockOptions {
  /** How long to wait for the lock; 0 waits for ever. @default "0" */
  timeout?: string;
  /** Consul's older name for `timeout`. */
  try?: string;
  /** Session TTL. @default "15s" */
  ttl?: string;
  /** Session name. @default "roster lock <key>" */
  name?: string;
  /** Holders at once: 1 is a lock, more a semaphore. @default "1" */
  limit?: string;
  /** Exit with the command's code (undefined: yes); false exits 0 once the command ran. */
  childExitCode?: boolean;
  /** Failed reads in a row tolerated while watching the held lock. @default "3" */
  monitorRetry?: string;
  /** Say each step on stderr. */
  verbose?: boolean;
}

/**
 * A session create still unanswered when the wait ends (`--timeout`, a signal) is waited for this much
 * longer, so that a session the agent made late is destroyed rather than left to lapse after its TTL.
 * The destroy that follows gets as long.
 */
const lateCreateWaitMs = 2_000;
/** One queued acquire (or one wait for a free slot) waits on the agent at most this long; then we ask again. */
const acquireWaitChunkMs = 30_000;
/** One blocking read of the lock (watching that we still hold it) waits at most this long. */
const monitorWaitMs = 30_000;
/** After a failed read while watching the lock, wait this long before the next (Consul's 1s). */
const monitorRetryPauseMs = 1_000;
/** A command still running this long after SIGTERM (the lock was lost) gets SIGKILL. */
const killGraceMs = 5_000;
/** -n and -monitor-retry above this are surely typos. */
const countMax = 1_000_000;
const forwardedSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type Forwarded = (typeof forwardedSignals)[number];

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

function durationMs(flag: string, text: string, zeroAllowed: boolean): number {
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms < 0 || (!zeroAllowed && ms === 0)) throw usageError(`${flag}: "${text}" is not a ${zeroAllowed ? '' : 'positive '}duration such as 15s`);
  return ms;
}

function count(flag: string, text: string, min: number): number {
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > countMax) throw usageError(`${flag}: "${text}" is not a whole number from ${min} to ${countMax}`);
  return Number(text);
}

interface RunSettings {
  ttl: string;
  ttlMs: number;
  timeoutMs: number;
  timeoutText: string | undefined;
  monitorRetry: number;
  childExitCode: boolean;
  verbose: boolean;
}

export async function lockCommand(ctx: CliContext, prefix: string, command: string[], o: LockOptions): Promise<number> {
  const trimmed = prefix.replace(/\/+$/, '');
  if (trimmed === '') throw usageError('a key prefix is required');
  if (command.length === 0 || command[0] === '') throw usageError('a command to run is required: roster lock <prefix> -- <command> [args...]');
  if (o.timeout !== undefined && o.try !== undefined) throw usageError('--timeout and --try are one setting: give one of them');
  const ttl = o.ttl ?? '15s';
  const timeoutText = o.timeout ?? o.try;
  const settings: RunSettings = {
    ttl, ttlMs: durationMs('--ttl', ttl, false),
    timeoutMs: durationMs(o.try !== undefined ? '--try' : '--timeout', timeoutText ?? '0', true), timeoutText,
    monitorRetry: count('--monitor-retry', o.monitorRetry ?? '3', 0),
    childExitCode: o.childExitCode !== false, verbose: o.verbose === true,
  };
  const limit = count('-n', o.limit ?? '1', 1);
  const claim = limit === 1 ? new KeyLock(ctx, `${trimmed}/.lock`) : new (await import('./semaphore.ts')).Semaphore(ctx, trimmed, limit);
  const run = new LockRun(ctx, claim, settings);
  run.say(limit === 1 ? `Setting up lock at path: ${trimmed}/.lock` : `Setting up semaphore (limit ${limit}) at prefix: ${trimmed}`);
  return run.go(command, o.name ?? `roster lock ${trimmed}/.lock`);
}

class LockRun {
  private sessionId: string | undefined;
  private child: ChildProcess | undefined;
  private signalled: Forwarded | undefined;
  private lostReason: string | undefined;
  /** When a renew last got through (performance.now(): a wall clock set back must not hide a lost session). */
  private lastRenewMs = performance.now();
  private renewTimer: LongTimer | undefined;
  private renewing = false;
  /** When the wait for the lock ends (`--timeout` counted from the start, session create included; performance.now()). */
  private deadline = Number.POSITIVE_INFINITY;
  private timedOut = false;
  /** The wait ended before the lock was ours (a timeout, a signal, a lost session). */
  private cutShort = false;
  /** Aborts the wait for the lock (a signal, a lost session, the deadline) and the monitor's blocking read. */
  private readonly waiting = new AbortController();
  private readonly monitoring = new AbortController();
  private readonly onSignal = (signal: Forwarded) => this.signal(signal);

  constructor(private readonly ctx: CliContext, private readonly claim: Claim, private readonly s: RunSettings) {}

  /** A step, on stderr with -verbose (the command's stdout stays its own). */
  say(text: string): void {
    if (this.s.verbose) this.ctx.stderr.write(`${text}\n`);
  }

  async go(command: string[], name: string): Promise<number> {
    for (const s of forwardedSignals) process.on(s, this.onSignal);
    const timeout = this.startDeadline();
    try {
      const index = await this.acquisition(name);
      timeout?.clear();
      if (index === 'signalled') return signalExitCode(this.signalled!);
      void this.monitor(index);
      this.say(`Lock acquired (index ${index}); starting the command`);
      const exit = await this.runChild(command, index);
      this.stopKeeping();
      if (this.lostReason !== undefined) throw new CliError(`lock lost: ${this.lostReason}; the command was stopped`);
      this.say(`The command exited (${exit}); releasing the lock`);
      await this.release();
      return this.s.childExitCode ? exit : exitCodes.ok;
    } finally {
      timeout?.clear();
      this.stopKeeping();
      for (const s of forwardedSignals) process.off(s, this.onSignal);
      // After a wait cut short the agent may be slow: the destroy is bounded as the late create was.
      await this.destroySession(this.cutShort ? lateCreateWaitMs : undefined);
    }
  }

  /** With `--timeout`, ends the wait at its deadline, counted from now. */
  private startDeadline(): LongTimer | undefined {
    if (this.s.timeoutMs === 0) return undefined;
    this.deadline = performance.now() + this.s.timeoutMs;
    return setLongTimeout(() => { this.timedOut = true; this.waiting.abort(); }, this.s.timeoutMs);
  }

  /** The session, the claim's entry and the wait for the lock: the index held, or 'signalled'. */
  private async acquisition(name: string): Promise<number | 'signalled'> {
    const id = await this.createSession(name);
    if (id === undefined) return this.waitEnded();
    this.sessionId = id;
    this.renewTimer = setLongInterval(() => void this.renew(), this.s.ttlMs / 2, false);
    try {
      await this.claim.enter(id, this.waiting.signal);
    } catch (err) {
      if (this.waiting.signal.aborted) return this.waitEnded();
      throw err;
    }
    this.say('Attempting lock acquisition');
    return this.acquire();
  }

  /** Why the wait ended before the lock was ours: 'signalled', or the error of a timeout or a lost session. */
  private waitEnded(): 'signalled' {
    this.cutShort = true;
    if (this.signalled !== undefined) return 'signalled';
    if (this.lostReason !== undefined) throw new CliError(`did not acquire ${this.claim.describe}: ${this.lostReason}`);
    if (this.timedOut) throw new CliError(`did not acquire ${this.claim.describe}${this.s.timeoutText !== undefined ? ` within ${this.s.timeoutText}` : ''}`);
    throw new Error('the wait for the lock ended without a cause');
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

  /**
   * The new session's id; undefined when the wait ended first (the deadline, a signal). Its create is then
   * waited for `lateCreateWaitMs` more: a session it made by then is kept in `sessionId`, to be destroyed.
   */
  private async createSession(name: string): Promise<string | undefined> {
    const creating = this.ctx.client.put('/v1/session/create', { body: { Name: name, TTL: this.s.ttl, Behavior: this.claim.behavior } }).then((a) => {
      if (a.status !== 200) throw new CliError(`could not create a session: ${failureOf(a).message}`);
      return a.json<{ ID: string }>().ID;
    });
    const ended = new Promise<undefined>((resolve) => {
      if (this.waiting.signal.aborted) resolve(undefined);
      this.waiting.signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    const id = await Promise.race([creating, ended]);
    if (id !== undefined) return id;
    const late = await Promise.race([creating.catch(() => undefined), sleep(lateCreateWaitMs).then(() => undefined)]);
    creating.catch(() => {}); // an answer after that is no one's to report
    this.sessionId = late;
    return undefined;
  }

  /** Renews the session; it is lost when the agent no longer knows it or no renew got through for a TTL. */
  private async renew(): Promise<void> {
    if (this.renewing || this.sessionId === undefined) return;
    this.renewing = true;
    try {
      const a = await this.ctx.client.put(`/v1/session/renew/${encodeURIComponent(this.sessionId)}`, { timeoutMs: this.s.ttlMs / 2 });
      if (a.status === 200) this.lastRenewMs = performance.now();
      else if (a.status === 404) this.lose(`session ${this.sessionId} was invalidated`);
    } catch { /* the agent did not answer: counted below */ } finally {
      this.renewing = false;
    }
    if (performance.now() - this.lastRenewMs > this.s.ttlMs) this.lose(`the session could not be renewed for ${this.s.ttl}`);
  }

  /** Waits for the lock; its index (the fencing token), or 'signalled' when interrupted first. */
  private async acquire(): Promise<number | 'signalled'> {
    const deadline = this.deadline;
    const spin = spinner(`waiting for ${this.claim.describe.replaceAll('"', '')}`, this.ctx.stderr);
    try {
      for (;;) {
        if (this.waiting.signal.aborted) return this.waitEnded();
        const waitMs = Math.max(0, Math.min(deadline - performance.now(), acquireWaitChunkMs));
        let index: number | undefined;
        try {
          index = await this.claim.tryAcquire(waitMs, this.waiting.signal);
        } catch (err) {
          if (this.waiting.signal.aborted) continue; // signalled, lost or timed out: the loop's head says which
          throw err;
        }
        if (index !== undefined) return index;
        if (performance.now() >= deadline) {
          this.timedOut = true;
          return this.waitEnded();
        }
      }
    } finally {
      spin.stop();
    }
  }

  /** Blocking reads of the lock while the command runs; -monitor-retry failed reads in a row are ridden out. */
  private async monitor(fromIndex: number): Promise<void> {
    let index = fromIndex;
    let retries = this.s.monitorRetry;
    while (!this.monitoring.signal.aborted && this.lostReason === undefined) {
      let held: Held;
      try {
        held = await this.claim.check(index, monitorWaitMs, this.monitoring.signal);
      } catch (err) {
        if (this.monitoring.signal.aborted) return;
        const why = err instanceof Error ? err.message : String(err);
        if (retries === 0) { this.lose(`watching the lock failed: ${why}`); return; }
        retries -= 1;
        this.say(`Watching the lock failed (${why}); retrying in 1s (${retries} more)`);
        index = 0; // the next read answers at once, so a recovered agent is seen at once
        await sleep(monitorRetryPauseMs, this.monitoring.signal);
        continue;
      }
      if (this.monitoring.signal.aborted) return;
      if (!held.held) { this.lose(held.reason); return; }
      if (retries < this.s.monitorRetry) this.say('Watching the lock again');
      retries = this.s.monitorRetry;
      index = held.index;
    }
  }

  /** Runs the command; resolves with the exit code to report (the child's, 128+n for a signal). */
  private runChild(command: string[], index: number): Promise<number> {
    const [file, ...args] = command.length === 1 ? ['sh', '-c', command[0]!] : command;
    return new Promise((resolve) => {
      const child = spawn(file!, args, {
        stdio: 'inherit',
        env: { ...this.ctx.env, ROSTER_LOCK_KEY: this.claim.what, ROSTER_LOCK_SESSION: this.sessionId!, ROSTER_LOCK_INDEX: String(index), CONSUL_LOCK_HELD: 'true' },
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
    this.renewTimer?.clear();
    this.renewTimer = undefined;
    this.monitoring.abort();
  }

  private async release(): Promise<void> {
    try {
      await this.claim.release();
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.ctx.stderr.write(`roster: ${why.startsWith('could not') ? why : `could not release ${this.claim.describe}: ${why}`}\n`);
    }
  }

  /** Best effort: a session left behind expires after its TTL and frees what it holds. */
  private async destroySession(timeoutMs?: number): Promise<void> {
    const id = this.sessionId;
    if (id === undefined) return;
    this.sessionId = undefined;
    try {
      await this.ctx.client.put(`/v1/session/destroy/${encodeURIComponent(id)}`, timeoutMs === undefined ? {} : { timeoutMs });
      this.say(`Session ${id} destroyed`);
    } catch (err) {
      this.ctx.stderr.write(`roster: could not destroy session ${id} (it expires after its TTL): ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}
