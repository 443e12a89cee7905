// Goal: the runtime's local deadlines are measured on the interval clock, so a wall clock stepped while they
// run (an NTP step) neither stretches them by the step nor ends them early. A write its log never confirms
// is answered as timed out after write_timeout, also when the wall clock is set back an hour meanwhile.
import { describe, expect, test } from 'vitest';
import { isWriteTimedOut } from '../../src/ports/log-errors.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { SteppedManualClock } from '../support/stepped-clock.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };
const hourMs = 3_600_000;

describe('a runtime whose wall clock is set back an hour', () => {
  test('a write its log never confirms is answered as timed out after write_timeout, not after the hour', async () => {
    const clock = new SteppedManualClock();
    const log = new MemoryLog({ clock, store: createMemoryLogStore() });
    const runtime = new Runtime({ log, clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id-n1', address: 'n1', writeTimeoutMs: 2_000 });
    await runtime.start();
    // The log takes no more appends and never answers them (a cluster's log that lost its nats-servers).
    log.append = () => new Promise<void>(() => {});
    let outcome: unknown;
    runtime.propose({ t: 'kv.set', key: 'k', value: null, flags: '0' }).then((r) => { outcome = r; }, (err: unknown) => { outcome = err; });
    clock.advance(100);
    clock.step(-hourMs);
    clock.advance(2_500);
    await flush();
    expect(isWriteTimedOut(outcome)).toBe(true);
    await runtime.stop();
  });
});
