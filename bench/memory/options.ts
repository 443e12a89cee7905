/** bench:memory's command line: how much it loads, how it samples, where it writes. */
import { tmpdir } from 'node:os';
import { count, parseBenchArgs, resultsPath } from '../support/options.ts';

export const valueBytes = 100;
/** Roster's default --snapshot-every; the WAL-only tail must stay below it. */
const snapshotEveryDefault = 20_000;

export interface Options {
  keys: number;
  sessions: number;
  concurrency: number;
  sample: number;
  tail: number;
  seed: number;
  timeoutS: number;
  idleS: number;
  dataParent: string;
  json: string;
}

export const usage = `usage: npm run bench:memory -- [options]
  --keys <n>             KV entries of ${valueBytes} bytes loaded                         [default 1000000]
  --sessions <n>         sessions created (TTL 24h, LockDelay 0s)                   [default 100000]
  --concurrency <n>      HTTP connections (requests in flight) during the load       [default 64]
  --sample <n>           random keys read back after each restart                    [default 1000]
  --tail <n>             keys written after the clean restart, before SIGKILL        [default 10000]
  --seed <n>             seed of the key sample                                      [default: time]
  --timeout <seconds>    the whole run must end within this                          [default 2400]
  --idle <seconds>       after the load and each restart, how long the agent is left idle at most
                         while waiting for V8's full collection (memory read every 5 s) [default 120]
  --data-parent <dir>    where the temporary data dir is made                        [default: os.tmpdir()]
  --json <path>          where the JSON results go       [default bench/results/memory-<ISO time>.json]`;
export function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    keys: { type: 'string' }, sessions: { type: 'string' }, concurrency: { type: 'string' },
    sample: { type: 'string' }, tail: { type: 'string' }, seed: { type: 'string' }, timeout: { type: 'string' },
    idle: { type: 'string' }, 'data-parent': { type: 'string' }, json: { type: 'string' },
  });
  const tail = count('tail', values.tail, 10_000, 0, 10_000_000);
  // More tail writes than --snapshot-every would let a periodic snapshot cover them: the crash restart would
  // no longer show what replaying the WAL costs.
  if (tail >= snapshotEveryDefault) throw new Error(`--tail: keep it below Roster's --snapshot-every (${snapshotEveryDefault}) so the tail is only in the WAL`);
  return {
    keys: count('keys', values.keys, 1_000_000, 1, 50_000_000),
    sessions: count('sessions', values.sessions, 100_000, 0, 10_000_000),
    concurrency: count('concurrency', values.concurrency, 64, 1, 4096),
    sample: count('sample', values.sample, 1_000, 1, 1_000_000),
    tail,
    seed: count('seed', values.seed, Date.now() % 2 ** 31, 0, 2 ** 31 - 1),
    timeoutS: count('timeout', values.timeout, 2_400, 1, 86_400),
    idleS: count('idle', values.idle, 120, 0, 3_600),
    dataParent: values['data-parent'] ?? tmpdir(),
    json: resultsPath(values.json, 'memory'),
  };
}
