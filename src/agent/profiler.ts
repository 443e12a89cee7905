/**
 * Profiles of the running agent for `/v1/agent/debug/*` and `roster debug`: a CPU profile (V8's sampling
 * profiler, the `.cpuprofile` format Chrome DevTools and speedscope open) and a sampling heap profile
 * (`.heapprofile`, what was allocated and is still live, by stack). Both are taken through the inspector
 * protocol in this process, without opening an inspector port, by V8's sampling profilers. V8 runs one
 * profiler of each kind per process, so one of each runs at a time.
 */
import { Session } from 'node:inspector/promises';
import type { StopSignal } from '../util/stop.ts';
import { setLongTimeout } from '../util/timer.ts';

export type ProfileKind = 'cpu' | 'heap';

/** Microseconds between CPU samples (V8's default is 1000). */
const cpuSampleIntervalUs = 1000;
/** Bytes allocated between heap samples, on average (V8's default). */
const heapSampleIntervalBytes = 32 * 1024;

export class Profiler {
  private readonly running = new Set<ProfileKind>();

  constructor(private readonly enabledBySettings: () => boolean) {}

  /** `enable_debug` of the config file (read at each request, so a reload changes it). */
  get enabled(): boolean {
    return this.enabledBySettings();
  }

  busy(kind: ProfileKind): boolean {
    return this.running.has(kind);
  }

  /**
   * Profiles for `ms` (less when `stop` is aborted first, for a client gone away: the profile is then
   * dropped and undefined returned). The caller checks `busy` first.
   */
  async take(kind: ProfileKind, ms: number, stop: StopSignal): Promise<unknown> {
    this.running.add(kind);
    const session = new Session();
    session.connect();
    try {
      if (kind === 'cpu') {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: cpuSampleIntervalUs });
        await session.post('Profiler.start');
      } else {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', { samplingInterval: heapSampleIntervalBytes });
      }
      await waitFor(ms, stop);
      if (kind === 'cpu') return stop.aborted ? undefined : (await session.post('Profiler.stop')).profile;
      return stop.aborted ? undefined : (await session.post('HeapProfiler.stopSampling')).profile;
    } finally {
      session.disconnect();
      this.running.delete(kind);
    }
  }
}

function waitFor(ms: number, stop: StopSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const done = () => {
      timer.clear();
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setLongTimeout(done, ms, false);
    stop.addEventListener('abort', done, { once: true });
  });
}
