/**
 * What the JetStream log's tests on a real nats-server share: stream names no other test of the run uses,
 * proposals to append, a JetStream manager on a connection of its own, and the logs of one suite on one
 * server, each test on a fresh stream that is deleted after it.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { JetStreamLog, type JetStreamLogOptions } from '../../cluster/index.ts';
import { startNatsCluster, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import type { Proposal } from '../../src/ports/log.ts';

let streams = 0;
/** A stream name no other test of this run uses, starting with `prefix`. */
export const freshStream = (prefix: string): string => `${prefix}${process.pid}_${Date.now().toString(36)}_${++streams}`;

/** `count` key writes of `node`, with pids `<node>-<from>` onwards. */
export const proposals = (node: string, from: number, count: number): Proposal[] => Array.from({ length: count }, (_, k) => ({
  pid: `${node}-${from + k}`,
  cmd: { t: 'kv.set', key: `${node}/k${from + k}`, value: null, flags: '0' },
}));

/** Runs `body` with a JetStream manager on a connection of its own to `servers`, closed after it. */
export async function withJsm<T>(servers: string[], body: (jsm: JetStreamManager) => Promise<T>): Promise<T> {
  const nc = await connect({ servers });
  try {
    return await body(await jetstreamManager(nc));
  } finally {
    await nc.close();
  }
}

/** Deletes `stream`; one that is not there is no error. */
export async function deleteStream(servers: string[], stream: string): Promise<void> {
  await withJsm(servers, (jsm) => jsm.streams.delete(stream).catch(() => false));
}

export interface SuiteLogs {
  /** The running test's stream, fresh for each test. */
  readonly stream: string;
  /** A JetStreamLog on the running test's stream (one replica, the system clock unless `extra` says). */
  make(nodeName: string, extra?: Partial<JetStreamLogOptions>): JetStreamLog;
}

/**
 * The JetStreamLogs of the enclosing suite on one nats-server (`servers` is read when a test runs): each test
 * gets a fresh stream named from `prefix`; after it, the logs it made are closed and its stream is deleted.
 */
export function useSuiteLogs(prefix: string, servers: () => string[]): SuiteLogs {
  const logs: JetStreamLog[] = [];
  let stream = '';
  beforeEach(() => {
    stream = freshStream(prefix);
  });
  afterEach(async () => {
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await deleteStream(servers(), stream);
  });
  return {
    get stream() {
      return stream;
    },
    make(nodeName, extra = {}) {
      const log = new JetStreamLog({ servers: servers(), stream, replicas: 1, nodeName, clock: new SystemClock(), ...extra });
      logs.push(log);
      return log;
    },
  };
}

/**
 * nats-servers for the enclosing suite (one, or three routed with `servers: 3`), started before its tests
 * and stopped after them; `nats` is read when a test runs.
 */
export function useSuiteNats(servers: 1 | 3 = 1): { readonly nats: NatsCluster } {
  let nats: NatsCluster | undefined;
  beforeAll(async () => {
    nats = servers === 1 ? await startNatsServer() : await startNatsCluster();
  }, 120_000);
  afterAll(async () => {
    await nats?.shutdown();
  });
  return {
    get nats() {
      if (nats === undefined) throw new Error('the suite\'s nats-servers are not started yet');
      return nats;
    },
  };
}
