// Goal: the Clock twins and the real clock pass one compliance suite (clock-compliance.ts): the system
// clock on real time, the manual clock of unit tests, and the simulation's drifting clock (test/sim).
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import { SimClock } from '../sim/sim-clock.ts';
import { Scheduler } from '../sim/scheduler.ts';
import { clockCompliance } from './clock-compliance.ts';

clockCompliance('SystemClock', {
  unitMs: 40,
  create: () => ({ clock: new SystemClock(), advance: (ms) => sleep(ms + 15) }),
});

clockCompliance('ManualClock', {
  unitMs: 1_000,
  create: () => {
    const clock = new ManualClock();
    return { clock, advance: async (ms) => clock.advance(ms) };
  },
});

for (const hw of [{ drift: 0, offsetMs: 0 }, { drift: 0.03, offsetMs: 400 }, { drift: -0.03, offsetMs: -500 }]) {
  clockCompliance(`SimClock (drift ${hw.drift}, offset ${hw.offsetMs} ms)`, {
    unitMs: 1_000,
    create: () => {
      const sched = new Scheduler({ gate: () => 'run', defer: () => {} });
      const clock = new SimClock(sched, hw, 'n1', 1);
      return {
        clock,
        advance: async (ms) => {
          // `ms` of the node's clock is ms / (1 + drift) of true time: run every event up to there.
          const until = sched.now + Math.ceil(ms / (1 + hw.drift)) + 1;
          for (let ev = sched.popUntil(until); ev !== undefined; ev = sched.popUntil(until)) ev.fn();
          sched.now = Math.max(sched.now, until);
        },
      };
    },
  });
}
