// Goal: the snapshots a node keeps are the ones compaction counts on. Each node keeps two objects and a
// save replaces the older one, never the one it loaded or wrote last; the mark it reports as the oldest
// it may start from is the older of the two, and only once the store has it. A node opening picks the
// newest snapshot that is usable: not past the stream's end (a full crash can cost the stream its last
// messages) and not before a purge; when the stream was compacted and no snapshot reaches its start,
// open() waits for the store instead of starting from nothing. The listing reads the bucket's stream
// directly and sees every object. An object of the single-object layout is read, and removed after two
// saves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type StreamInfo } from '@nats-io/jetstream';
import { Objm, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { Bucket, bucketStreamOf } from '../../cluster/jetstream/bucket.ts';
import { Marks } from '../../cluster/jetstream/marks.ts';
import { listObjects } from '../../cluster/jetstream/object-list.ts';
import { isTransient } from '../../cluster/jetstream/retry.ts';
import { SnapshotStore } from '../../cluster/jetstream/snapshots.ts';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { silentLogger } from '../../src/ports/logger.ts';

/** An object store in memory: enough of ObjectStore for SnapshotStore. */
function memoryStore(): { store: ObjectStore; objects: Map<string, { index: string; bytes: Uint8Array }>; deleted: string[] } {
  const objects = new Map<string, { index: string; bytes: Uint8Array }>();
  const deleted: string[] = [];
  const store = {
    putBlob: async (meta: { name: string; metadata: Record<string, string> }, bytes: Uint8Array) => {
      objects.set(meta.name, { index: meta.metadata.index!, bytes });
    },
    getBlob: async (name: string) => objects.get(name)?.bytes ?? null,
    list: async () => [...objects].map(([name, o]) => ({ name, deleted: false, metadata: { index: o.index } }) as unknown as ObjectInfo),
    delete: async (name: string) => { deleted.push(name); objects.delete(name); },
  } as unknown as ObjectStore;
  return { store, objects, deleted };
}

const info = (first: number, last: number): StreamInfo =>
  ({ created: 'c1', state: { messages: last - first + 1, first_seq: first, last_seq: last } }) as unknown as StreamInfo;

function snapshotStore(store: ObjectStore, nodeName = 'n1', openTimeoutMs = 400): SnapshotStore {
  return new SnapshotStore({ store, stream: 'LOG', nodeName, logger: silentLogger, streamCreated: 'c1', publishTimeoutMs: 100, openTimeoutMs });
}

/** Marks where message seq k holds indexes up to 2k. */
function marksUpTo(seq: number): Marks {
  const marks = new Marks({ seq: 0, index: 0, atMs: 0 });
  for (let k = 1; k <= seq; k++) marks.push({ seq: k, index: 2 * k, atMs: k });
  return marks;
}

async function saveAt(s: SnapshotStore, seq: number): Promise<void> {
  await s.save({ index: 2 * seq, data: new TextEncoder().encode(`state@${seq}`) }, () => 2 * seq, marksUpTo(seq));
}

describe('two snapshots per node', () => {
  it('a save replaces the older of the two; the reported start is the older one, once stored', async () => {
    const { store, objects } = memoryStore();
    const s = snapshotStore(store);
    expect(await s.startFrom(info(1, 100), performance.now() + 400)).toBeUndefined();
    expect(s.oldestStart).toEqual({ seq: 0, index: 0 });
    await saveAt(s, 10);
    expect(s.oldestStart).toEqual({ seq: 0, index: 0 });
    await saveAt(s, 20);
    expect(s.oldestStart).toEqual({ seq: 10, index: 20 });
    expect([...objects.keys()].sort()).toEqual(['LOG/n1/0', 'LOG/n1/1']);
    await saveAt(s, 30);
    expect(s.oldestStart).toEqual({ seq: 20, index: 40 });
    // The object of seq 10 was replaced; 20 and 30 are both there.
    expect([...objects.values()].map((o) => o.index).sort()).toEqual(['40', '60']);
  });

  it('after a restart that opened from its own older object, a save does not replace that one', async () => {
    const { store, objects } = memoryStore();
    const first = snapshotStore(store);
    await first.startFrom(info(1, 100), performance.now() + 400);
    await saveAt(first, 10);
    await saveAt(first, 20);
    // The stream lost its tail past seq 15 in a crash: the newest (seq 20) lies past its end.
    const second = snapshotStore(store);
    const record = await second.startFrom(info(1, 15), performance.now() + 400);
    expect(record?.seq).toBe(10);
    const opened = [...objects].find(([, o]) => o.index === '20')![0];
    await saveAt(second, 14);
    // The save went to the other slot: the snapshot it opened from is still there.
    expect(objects.get(opened)?.index).toBe('20');
    expect(second.oldestStart).toEqual({ seq: 10, index: 20 });
  });

  it('open skips a snapshot the stream was purged past and one past its end, and takes the newest usable', async () => {
    const { store } = memoryStore();
    const a = snapshotStore(store, 'a');
    await a.startFrom(info(1, 100), performance.now() + 400);
    await saveAt(a, 10);
    await saveAt(a, 50);
    const b = snapshotStore(store, 'b');
    await b.startFrom(info(1, 100), performance.now() + 400);
    await saveAt(b, 90);
    // The stream was purged below seq 40 and ends at 80: seq 10 and seq 90 are unusable, 50 is the one.
    const c = snapshotStore(store, 'c');
    expect((await c.startFrom(info(40, 80), performance.now() + 400))?.seq).toBe(50);
  });

  it('a compacted stream with no snapshot reaching its start: open waits for the store, then fails naming it', async () => {
    const { store } = memoryStore();
    const a = snapshotStore(store, 'a');
    await a.startFrom(info(1, 100), performance.now() + 400);
    await saveAt(a, 10);
    const late = snapshotStore(store, 'late', 600);
    const t0 = Date.now();
    await expect(late.startFrom(info(40, 80), performance.now() + 600)).rejects.toThrow(/no usable snapshot among 1 in the bucket, and the stream starts at seq 40/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
  });

  it('an object of the single-object layout is read, and removed once its node saved twice', async () => {
    const { store, objects, deleted } = memoryStore();
    const old = { index: 2 * 10, seq: 10, seqIndex: 20, seqAtMs: 10, stream: 'LOG', streamCreated: 'c1', node: 'n1', v: 1, data: 'x' };
    objects.set('LOG/n1', { index: '20', bytes: new TextEncoder().encode(JSON.stringify(old)) });
    const s = snapshotStore(store);
    expect((await s.startFrom(info(1, 100), performance.now() + 400))?.seq).toBe(10);
    await saveAt(s, 20);
    expect(objects.has('LOG/n1')).toBe(true);
    await saveAt(s, 30);
    expect(deleted).toEqual(['LOG/n1']);
    expect([...objects.keys()].sort()).toEqual(['LOG/n1/0', 'LOG/n1/1']);
  });
});

describe('listing the bucket on a nats-server', () => {
  let server: NatsCluster;
  let nc: NatsConnection;
  let os: ObjectStore;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.urls });
    os = await new Objm(jetstream(nc)).create('SLOTS', { storage: StorageType.File });
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.shutdown();
  });

  it('reads every live object with its metadata, replaced and deleted ones as they are now', async () => {
    for (let k = 0; k < 12; k++) await os.putBlob({ name: `LOG/n${k % 4}/${k % 2}`, metadata: { index: String(k) } }, new Uint8Array([k]));
    await os.putBlob({ name: 'LOG/gone', metadata: { index: '99' } }, new Uint8Array([1]));
    await os.delete('LOG/gone');
    const listed = await listObjects(await jetstreamManager(nc), 'SLOTS');
    const byName = Object.fromEntries(listed.map((o) => [o.name, o.metadata?.index]));
    expect(byName).toEqual({ 'LOG/n0/0': '8', 'LOG/n1/1': '9', 'LOG/n2/0': '10', 'LOG/n3/1': '11' });
  });

  it('a bucket whose stream this server does not know (yet) fails as a transient error, not as an empty bucket', async () => {
    const failure = await listObjects(await jetstreamManager(nc), 'NOT_CREATED').then(() => undefined, (err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/stream OBJ_NOT_CREATED is not known to this server yet/);
    expect(isTransient(failure)).toBe(true);
  });
});

describe('the bucket deleted on the nats-servers', () => {
  let server: NatsCluster;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.urls });
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.shutdown();
  });

  it('covers() reads which stream positions the bucket holds a snapshot for; deleted, the bucket is made again on the next write or look', async () => {
    const jsm = await jetstreamManager(nc);
    const create = () => new Objm(jetstream(nc)).create('REMADE', { storage: StorageType.File });
    const warns: unknown[] = [];
    const bucket = new Bucket(await create(), { name: 'REMADE', jsm, create, logger: { ...silentLogger, warn: (o: unknown) => void warns.push(o) } });
    let remade = 0;
    bucket.onRemade(() => void (remade += 1));
    await bucket.putBlob({ name: 'LOG/n1/0', metadata: { index: '20', seq: '10' } }, new Uint8Array([1]));
    await bucket.putBlob({ name: 'OTHER/n1/0', metadata: { index: '90', seq: '50' } }, new Uint8Array([2]));
    expect(await bucket.covers('LOG', 9)).toBe(true);
    expect(await bucket.covers('LOG', 10)).toBe(true);
    expect(await bucket.covers('LOG', 11)).toBe(false);
    expect(remade).toBe(0);

    // Deleted: a look finds no snapshot and makes the bucket again, empty.
    expect(await jsm.streams.delete(bucketStreamOf('REMADE'))).toBe(true);
    expect(await bucket.covers('LOG', 5)).toBe(false);
    expect(remade).toBe(1);
    expect(warns).toHaveLength(1);
    expect((await jsm.streams.info(bucketStreamOf('REMADE'))).config.name).toBe('OBJ_REMADE');
    expect(await bucket.list()).toEqual([]);

    // Deleted again: the write that finds it gone makes it again and is written.
    expect(await jsm.streams.delete(bucketStreamOf('REMADE'))).toBe(true);
    await bucket.putBlob({ name: 'LOG/n1/1', metadata: { index: '40', seq: '30' } }, new Uint8Array([3]));
    expect(remade).toBe(2);
    expect(Buffer.from((await bucket.getBlob('LOG/n1/1'))!)).toEqual(Buffer.from([3]));
    expect(await bucket.covers('LOG', 30)).toBe(true);

    // A write failing for another reason is not taken for a lost bucket.
    const refused = await bucket.putBlob({ name: '', metadata: {} }, new Uint8Array([4])).then(() => 'written', (err: Error) => err.message);
    expect(refused).not.toBe('written');
    expect(remade).toBe(2);
  });
});
