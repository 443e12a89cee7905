/**
 * The nats-servers out of JetStream storage for the log: a server's `max_file_store` reached, or the
 * account's storage limit. JetStream refuses each publish at once ("insufficient resources", "resource
 * limits exceeded for account") and stores nothing of it, so a commit refused so on its first attempt is
 * refused as unavailable, at once, as a full disk refuses a single node's writes: nothing of it applied,
 * retried by the client. (Refused on a later attempt, an earlier one may have been stored with its answer
 * lost: its outcome stays unknown.) Retrying such a publish for half a minute, as a transient failure,
 * held every write for the agent's write timeout and then answered "outcome unknown".
 *
 * While the storage is full the log tells its listeners it cannot store writes (gRPC health NOT_SERVING,
 * writes set aside at start wait), and an empty commit is published every `probeEveryMs` to learn when
 * it can again; the first publish stored, a client's or the probe's, tells them it can.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { unavailableError, type Logger } from '../../src/ports/index.ts';
import { setLongTimeout, type LongTimer } from '../../src/util/index.ts';
import { kind } from './options.ts';
import { errorMessage } from './retry.ts';

/** JetStream's "insufficient resources" (a server's storage limit) and "resource limits exceeded for account". */
export const storageExhaustedCodes: ReadonlySet<number> = new Set([10023, 10002]);

/** True for JetStream's refusal of a publish for want of storage (nothing of it stored). */
export function isStorageExhausted(err: unknown): boolean {
  return err instanceof JetStreamApiError && storageExhaustedCodes.has(err.code);
}

export interface StorageWatchPorts {
  stream: string;
  logger: Logger;
  probeEveryMs: number;
  /** Tells the log's listeners whether it stores writes. */
  tell(writable: boolean): void;
  /** Publishes an empty commit; settles either way (its outcome comes back through `refused` or `stored`). */
  probe(): Promise<void>;
  /** True once the log is closing or failed: no probe is made then. */
  stopped(): boolean;
}

export class StorageWatch {
  private full = false;
  private probeTimer: LongTimer | undefined;

  constructor(private readonly ports: StorageWatchPorts) {}

  /** A publish was refused for want of storage: the error its appends get (see the file's comment). */
  refused(err: unknown): Error {
    const { ports } = this;
    if (!this.full) {
      this.full = true;
      ports.logger.error({ stream: ports.stream, err: errorMessage(err) }, 'JetStream log: the nats-servers have no JetStream storage left for the stream: '
        + 'writes are refused (nothing of them stored) until they have; free space on the servers\' store_dir disks or raise max_file_store '
        + '(or the account\'s storage limit), see docs/cluster.md');
      ports.tell(false);
    }
    this.scheduleProbe();
    return unavailableError(kind, `the nats-servers have no JetStream storage left for the log (${errorMessage(err)})`, 'storage');
  }

  /** A publish was stored: writes go through again. */
  stored(): void {
    if (!this.full) return;
    this.full = false;
    this.probeTimer?.clear();
    this.probeTimer = undefined;
    this.ports.logger.info({ stream: this.ports.stream }, 'JetStream log: the nats-servers store writes again');
    this.ports.tell(true);
  }

  private scheduleProbe(): void {
    if (this.probeTimer !== undefined) return;
    this.probeTimer = setLongTimeout(() => {
      this.probeTimer = undefined;
      if (!this.full || this.ports.stopped()) return;
      void this.ports.probe().finally(() => {
        if (this.full) this.scheduleProbe();
      });
    }, this.ports.probeEveryMs);
  }
}
