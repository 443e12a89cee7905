/**
 * The owner actors of this agent's checks. Checks run on the agent they were registered with and are
 * never taken over by another node. Each runner only proposes: probe results (conditional on the
 * check's registration generation), TTL lapses (conditional on the last update), alias states and
 * reaps (conditional on the time the check became critical). Apply decides what they change.
 */
import type { Command } from '../domain/commands.ts';
import type { CheckStatus, HealthCheck } from '../domain/types.ts';
import { intervalMs, type Clock, type TimerHandle } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { RuntimeObserver } from '../ports/observer.ts';
import type { ProbeFactory } from '../ports/probe.ts';
import { systemRandom, type Random } from '../ports/random.ts';
import { probeResultChange, type RegistryState, type Result } from '../state/index.ts';
import { aliasState } from './alias-state.ts';
import { outputBytesOf, recordedProbeOutput } from './check-output.ts';
import { EntryTimeEstimate } from './entry-time.ts';
import { ProbeSlots } from './probe-slots.ts';

export interface CheckOwnerOptions {
  clock: Clock;
  nodeName: string;
  state: () => RegistryState;
  propose: (cmd: Command) => Promise<Result>;
  probeFor: ProbeFactory;
  logger: Pick<Logger, 'warn'>;
  /** Draws the jitter of each check's first probe. @default Math.random */
  random?: Random;
  /** How often critical checks are looked at for DeregisterCriticalServiceAfter. @default 30s */
  reapIntervalMs?: number;
  /** Smallest DeregisterCriticalServiceAfter honoured (smaller values are raised). @default 1 min */
  deregisterAfterMsMin?: number;
  /** Probes run no more often than this (smaller intervals are raised, like Consul's 1s). @default 1s */
  intervalMsMin?: number;
  /** Probes that run at once (limits.check_probes_max): see ProbeSlots for who waits and who gives way. @default 1024 */
  probesMax?: number;
  /** Told of each probe run (metrics). @default none */
  observer?: Pick<RuntimeObserver, 'checkRan'>;
  /**
   * check_update_interval: a probe result that changes only a check's output is written at most about
   * once per this interval (each wait drawn from half to one and a half of it); status changes are
   * written at once. 0 writes every change at once (the agent's check_update_interval is 5 min by default). @default 0
   */
  updateIntervalMs?: number;
}

interface Runner {
  generation: number;
  /** For TTL checks: the update the armed timer is for. */
  ttlUpdateIndex: number;
  timer: TimerHandle | undefined;
  abort: AbortController;
  /** The runner's writes, one after another (a deferred output and a probe result never race). */
  queue: Promise<void>;
  /** When this runner last wrote the check's output (interval clock); -Infinity before its first. */
  outputWrittenMs: number;
  /** The latest probe result, held back because it changes only the output. */
  deferred: Deferred | undefined;
  /** The last probe had its slot taken back: the next waits behind the others' (ProbeSlots). */
  slowTarget: boolean;
  /** The held-back result that was latest when a write began, shown until that write has applied. */
  writing: Held | undefined;
}

interface Held { status: CheckStatus; output: string }

/** A held-back result, and its wait: `draw` × the interval (`intervalMs`, as when the wait was set) after the last write. */
interface Deferred { status: CheckStatus; output: string; timer: TimerHandle; draw: number; intervalMs: number }

/** The output of a check whose probe was stopped as its slot was taken back (ProbeSlots). */
function reclaimedOutput(slots: number): string {
  return `Probe stopped: its target had kept it waiting longest while all ${slots} probe slots of the agent were taken (limits.check_probes_max)`;
}

export class CheckOwner {
  private readonly runners = new Map<string, Runner>();
  /** The runners of alias checks (a check's type changes only with a new generation, a new runner). */
  private readonly aliasRunners = new Set<string>();
  private reaper: TimerHandle | undefined;
  private stopped = false;
  private readonly reapIntervalMs: number;
  readonly deregisterAfterMsMin: number;
  private readonly intervalMsMin: number;
  private readonly random: Random;
  /** The probes running and waiting, bounded by limits.check_probes_max. */
  readonly probeSlots: ProbeSlots;
  /** The alias update in flight for each alias check, so that catalog changes meanwhile do not propose it again. */
  private readonly aliasInFlight = new Map<string, string>();
  /** The log's time now, which the reaper counts on. */
  private readonly entryTime: EntryTimeEstimate;
  /** check_update_interval (CheckOwnerOptions.updateIntervalMs); a reload changes it, for the results that follow. */
  updateIntervalMs: number;

  constructor(private readonly o: CheckOwnerOptions) {
    this.reapIntervalMs = o.reapIntervalMs ?? 30_000;
    this.deregisterAfterMsMin = o.deregisterAfterMsMin ?? 60_000;
    this.intervalMsMin = o.intervalMsMin ?? 1_000;
    this.random = o.random ?? systemRandom;
    this.probeSlots = new ProbeSlots(o.probesMax ?? 1024, o.clock);
    this.entryTime = new EntryTimeEstimate(o.clock, o.state);
    this.updateIntervalMs = o.updateIntervalMs ?? 0;
  }

  get size(): number {
    return this.runners.size;
  }

  /**
   * The check as this agent knows it: with the output of its latest probe result when that is held back
   * (an output-only change waiting for check_update_interval), as the agent's own endpoints show it.
   */
  latest(check: HealthCheck): HealthCheck {
    const runner = this.runners.get(check.checkId);
    const mine = runner !== undefined && runner.generation === check.generation && check.node === this.o.nodeName;
    // While a write is applying, what was held back before it is still newer than the check's written output.
    const held = mine ? (runner.deferred ?? runner.writing) : undefined;
    return held === undefined || held.status !== check.status ? check : { ...check, output: held.output };
  }

  /** The checks a runner runs for now, by id. */
  running(): string[] {
    return [...this.runners.keys()];
  }

  start(): void {
    for (const check of this.o.state().checksOfNode(this.o.nodeName)) this.reconcile(check.checkId);
    this.scheduleReap();
  }

  /** Brings the check's runner in line with state: start, restart on a new generation, re-arm a TTL, or stop. */
  reconcile(checkId: string): void {
    if (this.stopped) return;
    const check = this.o.state().checkOf(this.o.nodeName, checkId);
    const runner = this.runners.get(checkId);
    if (check === undefined || check.source !== 'agent' || check.type === '') {
      if (runner) this.stopRunner(checkId, runner);
      return;
    }
    if (runner !== undefined && runner.generation === check.generation) {
      if (check.type === 'ttl' && runner.ttlUpdateIndex !== check.ttlUpdateIndex) this.armTtl(check, runner);
      return;
    }
    if (runner) this.stopRunner(checkId, runner);
    this.startRunner(check);
  }

  /** Alias checks follow other checks: after any catalog change, each recomputes what it mirrors. */
  catalogChanged(): void {
    for (const checkId of this.aliasRunners) {
      const runner = this.runners.get(checkId)!;
      const check = this.o.state().checkOf(this.o.nodeName, checkId);
      if (check?.type === 'alias' && check.generation === runner.generation) this.updateAlias(check);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const [id, runner] of this.runners) this.stopRunner(id, runner);
    if (this.reaper) this.o.clock.clearTimer(this.reaper);
  }

  // ---------------------------------------------------------------- runners

  private startRunner(check: HealthCheck): void {
    const runner: Runner = {
      generation: check.generation, ttlUpdateIndex: -1, timer: undefined, abort: new AbortController(),
      queue: Promise.resolve(), outputWrittenMs: -Infinity, deferred: undefined, writing: undefined, slowTarget: false,
    };
    this.runners.set(check.checkId, runner);
    if (check.type === 'ttl') this.armTtl(check, runner);
    else if (check.type === 'alias') {
      this.aliasRunners.add(check.checkId);
      this.updateAlias(check);
    }
    else {
      // The first probe comes after a random part of the interval, spreading checks registered together.
      const interval = Math.max(check.definition.intervalMs, this.intervalMsMin);
      this.schedule(check.checkId, runner, this.random() * interval);
    }
  }

  private stopRunner(checkId: string, runner: Runner): void {
    runner.abort.abort();
    if (runner.timer) this.o.clock.clearTimer(runner.timer);
    this.dropDeferred(runner);
    this.runners.delete(checkId);
    this.aliasRunners.delete(checkId);
  }

  private schedule(checkId: string, runner: Runner, delayMs: number): void {
    runner.timer = this.o.clock.setTimer(delayMs, () => void this.runProbe(checkId, runner));
  }

  private async runProbe(checkId: string, runner: Runner): Promise<void> {
    runner.timer = undefined;
    const check = this.o.state().checkOf(this.o.nodeName, checkId);
    if (check === undefined || check.generation !== runner.generation || runner.abort.signal.aborted) return;
    const probe = this.o.probeFor(check);
    if (probe !== undefined) {
      const startedMs = performance.now();
      const signal = runner.abort.signal;
      // A probe never throws; should one, its check reads critical rather than stop being probed.
      const ran = await this.probeSlots.run(signal, runner.slowTarget, (stop) => probe(stop).catch((err: unknown) => this.probeFailed(check, err)));
      if (ran.ended === 'aborted' || signal.aborted) return;
      runner.slowTarget = ran.ended === 'reclaimed';
      const result = ran.ended === 'done' ? ran.value : { status: 'critical' as const, output: reclaimedOutput(this.probeSlots.slots) };
      this.o.observer?.checkRan?.(check.type, result.status, (performance.now() - startedMs) / 1000);
      await this.inTurn(runner, () => this.proposeResult(checkId, runner, result.status, result.output));
    }
    if (this.runners.get(checkId) === runner && !runner.abort.signal.aborted) {
      this.schedule(checkId, runner, Math.max(check.definition.intervalMs, this.intervalMsMin));
    }
  }

  private probeFailed(check: HealthCheck, err: unknown): { status: CheckStatus; output: string } {
    this.o.logger.warn({ err, checkId: check.checkId }, 'check probe failed');
    return { status: 'critical', output: `probe failed: ${err instanceof Error ? err.message : String(err)}` };
  }

  /** Runs `write` after the runner's writes before it. */
  private inTurn(runner: Runner, write: () => Promise<void>): Promise<void> {
    const turn = runner.queue.then(write);
    runner.queue = turn.catch(() => undefined);
    return turn;
  }

  /**
   * Proposes a probe result unless it would change nothing (same status and output, counters at rest).
   * A result that changes only the output is held back while the output was written less than
   * check_update_interval ago, and written when that wait ends, unless a later result was written first
   * (one that only moves a threshold counter writes no output: what is held back stays, the agent's latest).
   */
  private async proposeResult(checkId: string, runner: Runner, status: CheckStatus, probeOutput: string): Promise<void> {
    const current = this.o.state().checkOf(this.o.nodeName, checkId);
    if (current === undefined || current.generation !== runner.generation || runner.abort.signal.aborted) return;
    const output = recordedProbeOutput(probeOutput, outputBytesOf(current));
    const change = probeResultChange(current, status, output);
    if (change === 'output' && this.holdBack(checkId, runner, status, output)) return;
    const held = runner.deferred;
    if (change !== 'counters') this.dropDeferred(runner);
    if (change === 'none') return;
    if (change !== 'counters') runner.outputWrittenMs = this.nowMs();
    await this.writeShowing(runner, change === 'counters' ? undefined : held, { t: 'check.update', node: this.o.nodeName, checkId, generation: runner.generation, via: 'probe', status, output });
  }

  /**
   * Holds back an output-only result; false when it is to be written now: holding back is off, or the wait
   * is over — counted with the interval now in force, so a reload that shortens it shortens a wait under way.
   */
  private holdBack(checkId: string, runner: Runner, status: CheckStatus, output: string): boolean {
    if (this.updateIntervalMs <= 0) return false;
    const held = runner.deferred;
    const draw = held?.draw ?? 0.5 + this.random();
    const waitMs = runner.outputWrittenMs + this.updateIntervalMs * draw - this.nowMs();
    if (!(waitMs > 0)) return false;
    if (held !== undefined && held.intervalMs === this.updateIntervalMs) {
      held.status = status;
      held.output = output;
      return true;
    }
    if (held !== undefined) this.o.clock.clearTimer(held.timer);
    const timer = this.o.clock.setTimer(waitMs, () => void this.inTurn(runner, () => this.writeDeferred(checkId, runner)));
    runner.deferred = { status, output, timer, draw, intervalMs: this.updateIntervalMs };
    return true;
  }

  /** Writes the held-back result, if it still changes only the output of the check as it is now. */
  private async writeDeferred(checkId: string, runner: Runner): Promise<void> {
    const held = runner.deferred;
    runner.deferred = undefined;
    const current = this.o.state().checkOf(this.o.nodeName, checkId);
    if (held === undefined || current === undefined || current.generation !== runner.generation || runner.abort.signal.aborted) return;
    if (probeResultChange(current, held.status, held.output) !== 'output') return;
    runner.outputWrittenMs = this.nowMs();
    await this.writeShowing(runner, held, { t: 'check.update', node: this.o.nodeName, checkId, generation: runner.generation, via: 'probe', status: held.status, output: held.output });
  }

  /**
   * Proposes a probe result's write while latest() still shows `held` (the result held back before it), so the
   * agent's own view never goes back to the older written output while the write applies.
   */
  private async writeShowing(runner: Runner, held: Held | undefined, cmd: Command): Promise<void> {
    runner.writing = held === undefined ? undefined : { status: held.status, output: held.output };
    const writing = runner.writing;
    await this.propose(cmd);
    if (runner.writing === writing) runner.writing = undefined;
  }

  private dropDeferred(runner: Runner): void {
    if (runner.deferred === undefined) return;
    this.o.clock.clearTimer(runner.deferred.timer);
    runner.deferred = undefined;
  }

  private nowMs(): number {
    return intervalMs(this.o.clock);
  }

  private armTtl(check: HealthCheck, runner: Runner): void {
    if (runner.timer) this.o.clock.clearTimer(runner.timer);
    runner.ttlUpdateIndex = check.ttlUpdateIndex;
    const ttlUpdateIndex = check.ttlUpdateIndex;
    runner.timer = this.o.clock.setTimer(check.definition.ttlMs, () => {
      runner.timer = undefined;
      void this.propose({ t: 'check.ttlExpire', node: this.o.nodeName, checkId: check.checkId, ttlUpdateIndex });
    });
  }

  /** An alias check mirrors a service instance (and its node's node checks): critical > warning > passing. */
  private updateAlias(check: HealthCheck): void {
    const { status, output } = aliasState(this.o.state(), check, this.o.nodeName);
    if (status === check.status && output === check.output) return;
    const update = JSON.stringify([check.generation, status, output]);
    if (this.aliasInFlight.get(check.checkId) === update) return;
    this.aliasInFlight.set(check.checkId, update);
    void this.propose({ t: 'check.update', node: this.o.nodeName, checkId: check.checkId, generation: check.generation, via: 'alias', status, output })
      .finally(() => { if (this.aliasInFlight.get(check.checkId) === update) this.aliasInFlight.delete(check.checkId); });
  }

  // ---------------------------------------------------------------- reaper

  private scheduleReap(): void {
    if (this.stopped) return;
    this.reaper = this.o.clock.setTimer(this.reapIntervalMs, () => {
      this.reap();
      this.scheduleReap();
    });
  }

  /**
   * Proposes deregistration of services whose check stayed critical past DeregisterCriticalServiceAfter.
   * Apply decides on entry time; this only needs to propose once that may be so.
   */
  private reap(): void {
    const now = this.entryTime.nowMs();
    for (const check of this.o.state().checksOfNode(this.o.nodeName)) {
      const given = check.definition.deregisterCriticalServiceAfterMs;
      const after = Math.max(given, this.deregisterAfterMsMin);
      if (check.serviceId === '' || given <= 0 || check.status !== 'critical' || check.criticalSinceMs === 0) continue;
      if (now - check.criticalSinceMs < after) continue;
      void this.propose({ t: 'service.reap', node: this.o.nodeName, serviceId: check.serviceId, checkId: check.checkId, criticalSinceMs: check.criticalSinceMs });
    }
  }

  private async propose(cmd: Command): Promise<void> {
    try {
      await this.o.propose(cmd);
    } catch (err) {
      if (!this.stopped) this.o.logger.warn({ err, cmd: cmd.t }, 'check proposal failed; the next run retries');
    }
  }
}
