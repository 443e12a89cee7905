// Goal: a node of the JetStream log reads commit messages written without a format version (an older
// release) and stops, through onDiverged (exit code 70 in the agent), at a commit of a newer format
// version than it reads, instead of skipping it or applying what follows.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { JetStreamLog } from '../../cluster/index.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import { logFormatVersion } from '../../src/log/index.ts';
import { collect } from '../log/compliance.ts';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';

let single: NatsCluster;
beforeAll(async () => {
  single = await startNatsServer();
});
afterAll(async () => {
  await single?.shutdown();
});

it('reads unversioned commits and stops at a commit of a newer format version', async () => {
  const stream = `FV${process.pid}_${Date.now().toString(36)}`;
  const diverged: Error[] = [];
  const log = new JetStreamLog({
    servers: single.urls, stream, replicas: 1, nodeName: 'a', clock: new SystemClock(), onDiverged: (err) => diverged.push(err),
  });
  const nc = await connect({ servers: single.urls });
  try {
    await log.open();
    const got = collect(log);
    const js = jetstream(nc);
    const subject = `roster.log.${stream}`;
    await js.publish(subject, JSON.stringify([{ p: 'old-1', c: { t: 'barrier' }, t: 5 }]), { msgID: 'old.boot.1' });
    await log.append([{ pid: 'a-1', cmd: { t: 'barrier' } }]);
    expect(got.map((e) => [e.index, e.pid])).toEqual([[1, 'old-1'], [2, 'a-1']]);
    const newer = logFormatVersion + 1;
    await js.publish(subject, JSON.stringify([{ p: 'new-1', c: { t: 'barrier' }, t: 6, v: newer }]), { msgID: 'new.boot.1' });
    await js.publish(subject, JSON.stringify([{ p: 'old-2', c: { t: 'barrier' }, t: 7 }]), { msgID: 'old.boot.2' });
    for (let i = 0; i < 100 && diverged.length === 0; i++) await sleep(50);
    expect(diverged).toHaveLength(1);
    expect(diverged[0]!.message).toMatch(new RegExp(`format version ${newer}, newer than this node reads \\(versions up to ${logFormatVersion}\\)`));
    await sleep(300);
    expect(got.map((e) => e.pid)).toEqual(['old-1', 'a-1']);
    await expect(log.append([{ pid: 'a-2', cmd: { t: 'barrier' } }])).rejects.toThrow(/newer than this node reads/);
  } finally {
    await log.close().catch(() => undefined);
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
    await nc.close();
  }
});
