/** One signal that fires on the probe's own timeout or on the caller's abort, remembering which. */
import { setLongTimeout, type LongTimer } from '../util/timer.ts';
import { formatGoDuration } from './go-text.ts';
import { probeStopGraceMs } from './limits.ts';
import { critical, type Probe, type ProbeResult } from './types.ts';

export type StopReason = 'timeout' | 'canceled';

export interface Deadline {
  readonly signal: AbortSignal;
  /** Why signal fired; undefined while it has not. */
  readonly reason: StopReason | undefined;
  /** Clears the timer and the listener on the caller's signal; call it once the probe has its result. */
  dispose(): void;
}

/** timeoutMs undefined means no timeout of our own (the container exec check has none by default). */
export function startDeadline(timeoutMs: number | undefined, outer: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  let reason: StopReason | undefined;
  const stop = (why: StopReason) => {
    if (reason !== undefined) return;
    reason = why;
    controller.abort();
  };
  const onOuterAbort = () => stop('canceled');
  // A Timeout may exceed Node's 32-bit timer limit: setLongTimeout waits it out in full.
  const timer = timeoutMs === undefined ? undefined : setLongTimeout(() => stop('timeout'), timeoutMs, false);
  if (outer?.aborted) stop('canceled');
  else outer?.addEventListener('abort', onOuterAbort, { once: true });
  return {
    signal: controller.signal,
    get reason() {
      return reason;
    },
    dispose() {
      timer?.clear();
      outer?.removeEventListener('abort', onOuterAbort);
    },
  };
}

/**
 * Script and container exec checks stopped before the end: Consul's `Timed out (30s) running check`
 * (the real timeout, in Go's duration form), then a blank line and the output when there is any.
 * Consul has no text for a cancel (it just stops); ours says so in the same shape.
 */
export function stoppedRunText(reason: StopReason, timeoutMs: number | undefined, output: string): string {
  const head = reason === 'timeout' ? `Timed out (${formatGoDuration(timeoutMs ?? 0)}) running check` : 'Canceled running check';
  return output === '' ? head : `${head}\n\n${output}`;
}

/**
 * The probe, settled in time whatever it does: each probe stops at its deadline and settles with its own
 * text, and if it has not settled probeStopGraceMs after its timeout (or after the caller's abort) it is
 * settled for it, critical `Timed out (10s) running check` (`Canceled running check`). So a probe that a
 * target keeps waiting in a way it does not see (an answer the probe never hears end) still ends, and
 * with it whatever it holds for its caller (a probe slot). timeoutMs undefined: no timeout of its own,
 * only the caller's abort ends it.
 */
export function settledInTime(probe: Probe, timeoutMs: number | undefined): Probe {
  return (signal) => {
    let timer: LongTimer | undefined;
    let onAbort = () => {};
    const forced = new Promise<ProbeResult>((resolve) => {
      const arm = (ms: number, reason: StopReason) => {
        timer?.clear();
        timer = setLongTimeout(() => resolve(critical(stoppedRunText(reason, timeoutMs, ''))), ms, false);
      };
      if (timeoutMs !== undefined) arm(timeoutMs + probeStopGraceMs, 'timeout');
      onAbort = () => arm(probeStopGraceMs, 'canceled');
    });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    return Promise.race([probe(signal), forced]).finally(() => {
      timer?.clear();
      signal?.removeEventListener('abort', onAbort);
    });
  };
}
