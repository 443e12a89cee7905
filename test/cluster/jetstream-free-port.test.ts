// freePort (cluster/dev/nats-launcher.ts), which every local cluster and fault harness draws its ports from:
// the ports of one cluster are drawn before any is bound, so a draw must never repeat an earlier one.
import { describe, expect, it } from 'vitest';
import { freePort } from '../../cluster/dev/nats-launcher.ts';

describe('freePort', () => {
  it('never hands out the same port twice in one process, even before any of them is bound', async () => {
    // 2,000 draws from 12,000 ports: at random with repeats allowed, about 160 would repeat.
    const ports: number[] = [];
    for (let i = 0; i < 2_000; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.every((p) => p >= 20_000 && p < 32_000)).toBe(true);
  });
});
