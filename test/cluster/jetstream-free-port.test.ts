// freePort and withFreshStarts (cluster/dev/nats-launcher.ts), which every local cluster and fault harness
// starts with: the ports of one cluster are drawn before any is bound, so a draw must never repeat an
// earlier one, and a start that lost a port or never placed a stream is made again on fresh ports.
import { describe, expect, it } from 'vitest';
import { freePort, PlacementTimeout, withFreshStarts } from '../../cluster/dev/nats-launcher.ts';

describe('freePort', () => {
  it('never hands out the same port twice in one process, even before any of them is bound', async () => {
    // 2,000 draws from 12,000 ports: at random with repeats allowed, about 160 would repeat.
    const ports: number[] = [];
    for (let i = 0; i < 2_000; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.every((p) => p >= 20_000 && p < 32_000)).toBe(true);
  });
});

describe('withFreshStarts', () => {
  /** A start that fails with `failures` in turn, then answers its attempt number. */
  function starter(failures: Error[]): { start: () => Promise<number>; calls: () => number } {
    let n = 0;
    return {
      start: async () => {
        n += 1;
        const failure = failures[n - 1];
        if (failure !== undefined) throw failure;
        return n;
      },
      calls: () => n,
    };
  }

  it('starts again after a placement timeout or a port taken in between, and answers the start that worked', async () => {
    const s = starter([new PlacementTimeout('no placement'), new Error('nats-server n2 exited during start: bind: address already in use')]);
    expect(await withFreshStarts(s.start)).toBe(3);
    expect(s.calls()).toBe(3);
  });

  it('gives up after three starts with the last failure', async () => {
    const s = starter([new PlacementTimeout('first'), new PlacementTimeout('second'), new PlacementTimeout('third'), new PlacementTimeout('fourth')]);
    await expect(withFreshStarts(s.start)).rejects.toThrow('third');
    expect(s.calls()).toBe(3);
  });

  it('does not start again after any other failure', async () => {
    const s = starter([new Error('nats-server n1 not healthy after 20000 ms')]);
    await expect(withFreshStarts(s.start)).rejects.toThrow('not healthy');
    expect(s.calls()).toBe(1);
  });
});
