/**
 * Says so when a node that has seeds to dial hears no other member for a while. A wrong seed address, a
 * firewall, and a gossip key (`encrypt`) other than the members' all look alike from the node: every dial
 * fails, and it runs alone, owning every timer, while the others report it failed. The warning names each
 * seed with what its last dial failed with, and comes again every `repeatMs` while the node stays alone;
 * once it hears a member again it says that too.
 */
import type { Logger } from '../src/ports/index.ts';

export interface SeedWatchOptions {
  logger: Logger;
  /** How long a node with seeds may hear no other member before the warning. */
  aloneWarnMs: number;
  /** How often the warning comes again while the node stays alone. @default 300000 */
  repeatMs?: number;
}

export class SeedWatch {
  private readonly lastError = new Map<string, string>();
  private aloneSinceMs: number | undefined;
  private lastWarnedMs: number | undefined;

  constructor(private readonly o: SeedWatchOptions, startedMs: number) {
    this.aloneSinceMs = startedMs;
  }

  /** The outcome of a dial of `addr`: `err` when it failed (logged at debug). */
  dialed(addr: string, err?: unknown): void {
    if (err === undefined) {
      this.lastError.delete(addr);
      return;
    }
    this.lastError.set(addr, (err as Error)?.message ?? String(err));
    this.o.logger.debug({ err, addr }, 'membership dial failed');
  }

  /** After each redial round: whether another member is alive, and the seeds that are not this node. */
  round(nowMs: number, othersAlive: boolean, seeds: readonly string[]): void {
    if (othersAlive) {
      if (this.lastWarnedMs !== undefined) this.o.logger.info({ aloneForS: this.aloneForS(nowMs) }, 'membership: another member is heard again');
      this.aloneSinceMs = undefined;
      this.lastWarnedMs = undefined;
      return;
    }
    this.aloneSinceMs ??= nowMs;
    if (seeds.length === 0 || nowMs - this.aloneSinceMs < this.o.aloneWarnMs) return;
    if (this.lastWarnedMs !== undefined && nowMs - this.lastWarnedMs < (this.o.repeatMs ?? 300_000)) return;
    this.lastWarnedMs = nowMs;
    this.o.logger.warn({
      aloneForS: this.aloneForS(nowMs),
      seeds: seeds.map((addr) => ({ addr, lastError: this.lastError.get(addr) ?? 'connected, but no heartbeat heard from it' })),
    }, 'membership: no other member heard; check the seed addresses (--join), the firewall, and that every node has the same gossip key (encrypt)');
  }

  private aloneForS(nowMs: number): number {
    return Math.round((nowMs - (this.aloneSinceMs ?? nowMs)) / 1000);
  }
}
