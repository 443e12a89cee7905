/**
 * setTimeout for any delay. Node keeps a delay in a signed 32-bit millisecond count: anything above
 * timerStepMsMax (about 24.8 days) is taken as 1 ms, so a check TTL of 720h would lapse at once. A longer
 * delay is waited for in steps of at most timerStepMsMax, counted without reading the clock. Every delay the
 * agent or the command line takes from configuration or a client goes through here: the lint rule
 * house/timer-delay (eslint/timer-delay.js) refuses Node's timers with a delay no constant bounds.
 */
export const timerStepMsMax = 2 ** 31 - 1;

export interface LongTimer {
  clear(): void;
}

/** Runs `fn` once after `ms` (negative or NaN: at once). `unref`: the timer does not keep the process alive. */
export function setLongTimeout(fn: () => void, ms: number, unref = true): LongTimer {
  let left = Number.isFinite(ms) ? Math.max(0, ms) : ms > 0 ? Infinity : 0;
  let handle: NodeJS.Timeout | undefined;
  const arm = () => {
    const step = Math.min(left, timerStepMsMax);
    left -= step;
    handle = setTimeout(() => (left > 0 ? arm() : fn()), step);
    if (unref) handle.unref();
  };
  arm();
  return { clear: () => { if (handle !== undefined) clearTimeout(handle); handle = undefined; left = 0; } };
}

/** Runs `fn` every `ms` (each run armed after the last, by setLongTimeout), until cleared. */
export function setLongInterval(fn: () => void, ms: number, unref = true): LongTimer {
  let current: LongTimer | undefined;
  let cleared = false;
  const arm = () => {
    current = setLongTimeout(() => {
      if (cleared) return;
      arm();
      fn();
    }, ms, unref);
  };
  arm();
  return { clear: () => { cleared = true; current?.clear(); } };
}

/** Resolves after `ms`; the timer keeps the process alive meanwhile, as an awaited pause should. */
export function sleepMs(ms: number): Promise<void> {
  return new Promise((resolve) => setLongTimeout(resolve, ms, false));
}
