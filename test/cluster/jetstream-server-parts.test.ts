// Goal: the pieces of the JetStream log that talk to the server, each on its own against one real
// nats-server (2.9.10): how the audit reads the message id at a seq (a removed message is "no message
// found"), and how setup creates the stream or adopts one that exists, also when two nodes race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { silentLogger } from '../../src/ports/index.ts';
import { storedMessageId } from '../../cluster/jetstream/audit.ts';
import { ensureStream, type StreamPlan } from '../../cluster/jetstream/setup.ts';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';

let single: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  single = await startNatsServer();
  nc = await connect({ servers: single.urls });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
  await single?.shutdown();
});

let streams = 0;
const planFor = (): StreamPlan => {
  const stream = `P${process.pid}_${++streams}`;
  return { stream, subject: `roster.log.${stream}`, replicas: 1, publishRetryMsMax: 1000, publishTimeoutMs: 500 };
};

describe('storedMessageId', () => {
  it('reads the message id at a seq, and nothing where a message was removed or never stored', async () => {
    const plan = planFor();
    await jsm.streams.add({ name: plan.stream, subjects: [plan.subject], storage: StorageType.File, num_replicas: 1, deny_delete: false });
    const js = jetstream(nc);
    await js.publish(plan.subject, '[]', { msgID: 'n.b.1' });
    await js.publish(plan.subject, '[]', { msgID: 'n.b.2' });
    await js.publish(plan.subject, '[]');
    const stored = storedMessageId(jsm, plan.stream);
    expect(await stored(1)).toBe('n.b.1');
    expect(await jsm.streams.deleteMessage(plan.stream, 2, false)).toBe(true);
    expect(await stored(2)).toBeUndefined();
    expect(await stored(3)).toBeUndefined();
    expect(await stored(99)).toBeUndefined();
    await jsm.streams.delete(plan.stream);
  });
});

describe('ensureStream', () => {
  it('creates the stream refusing deletes when there is none; two nodes racing both end up on it', async () => {
    const plan = planFor();
    const other = await connect({ servers: single.urls });
    try {
      const [a, b] = await Promise.all([
        ensureStream(jsm, plan, silentLogger),
        ensureStream(await jetstreamManager(other), plan, silentLogger),
      ]);
      expect(a.info.created).toBe(b.info.created);
      expect(a).toMatchObject({ subject: plan.subject, strictSeq: true, differs: {} });
      expect(a.info.config.deny_delete).toBe(true);
    } finally {
      await other.close();
      await jsm.streams.delete(plan.stream);
    }
  });

  it('uses an existing stream with its own single subject and settings, naming the differences', async () => {
    const plan = planFor();
    await jsm.streams.add({ name: plan.stream, subjects: ['elsewhere'], storage: StorageType.Memory, num_replicas: 1 });
    const warned: object[] = [];
    const adopted = await ensureStream(jsm, plan, { ...silentLogger, warn: (obj: object) => { warned.push(obj); } });
    expect(adopted).toMatchObject({ subject: 'elsewhere', differs: { subject: 'elsewhere', storage: StorageType.Memory } });
    expect(warned).toHaveLength(1);
    await jsm.streams.delete(plan.stream);
  });
});
