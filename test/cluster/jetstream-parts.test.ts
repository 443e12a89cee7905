// Goal: the pure pieces of the JetStream log — numbering, marks, the stream settings it creates or
// adopts, where a snapshot lets a node start, which failures are retried and how long a setup step may
// hang — behave as cluster/jetstream/log.ts describes, without a server.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClosedConnectionError, InvalidArgumentError, nanos, TimeoutError } from '@nats-io/transport-node';
import { JetStreamApiError, StorageType, type StreamInfo } from '@nats-io/jetstream';
import { silentLogger } from '../../src/ports/index.ts';
import { numberCommit, type SnapshotRecord } from '../../cluster/jetstream/format.ts';
import { Marks } from '../../cluster/jetstream/marks.ts';
import { backoffMs, isTransient, retrying, settlesWithin, withinMs } from '../../cluster/jetstream/retry.ts';
import { adoptStream, duplicateWindowMs, messageBytesMax, streamConfig, type StreamPlan } from '../../cluster/jetstream/setup.ts';
import { settingsDiffer, watchSettings } from '../../cluster/jetstream/settings-watch.ts';
import { startMark, unusable } from '../../cluster/jetstream/snapshots.ts';

const plan: StreamPlan = { stream: 'LOG', subject: 'roster.log.LOG', replicas: 3, publishRetryMsMax: 30_000, publishTimeoutMs: 5000 };

/** A stream's info as the server reports it, with the fields the log reads. */
function streamInfo(config: Record<string, unknown> = {}, state: Partial<StreamInfo['state']> = {}): StreamInfo {
  return {
    created: '2026-01-01T00:00:00Z',
    config: {
      name: 'LOG', subjects: ['roster.log.LOG'], storage: StorageType.File, num_replicas: 3,
      duplicate_window: nanos(120_000), ...config,
    },
    state: { messages: 10, first_seq: 1, last_seq: 10, ...state },
  } as unknown as StreamInfo;
}

const apiError = (status: number, errCode: number): JetStreamApiError =>
  new JetStreamApiError({ code: status, err_code: errCode, description: `api ${status}` });

describe('numberCommit', () => {
  it('numbers each proposal after the cursor and never lets atMs go back', () => {
    const items = [{ p: 'a', c: { t: 'barrier' }, t: 90 }, { p: 'b', c: { t: 'barrier' }, t: 120 }] as never[];
    const { mark, entries } = numberCommit({ seq: 4, index: 7, atMs: 100 }, 5, items, 0);
    expect(mark).toEqual({ seq: 5, index: 9, atMs: 120 });
    expect(entries.map((e) => [e.index, e.atMs, e.pid])).toEqual([[8, 100, 'a'], [9, 120, 'b']]);
  });

  it('numbers but does not deliver what a snapshot already covers, and moves the mark over a skipped message', () => {
    const items = [{ p: 'a', c: { t: 'barrier' }, t: 1 }, { p: 'b', c: { t: 'barrier' }, t: 1 }] as never[];
    expect(numberCommit({ seq: 0, index: 0, atMs: 0 }, 1, items, 1).entries.map((e) => e.pid)).toEqual(['b']);
    expect(numberCommit({ seq: 3, index: 5, atMs: 9 }, 4, [], 0)).toEqual({ mark: { seq: 4, index: 5, atMs: 9 }, entries: [] });
  });
});

describe('Marks', () => {
  it('finds the newest mark at or before an index, and forgets the ones before a saved snapshot', () => {
    const marks = new Marks({ seq: 0, index: 0, atMs: 0 });
    for (let k = 1; k <= 5; k += 1) marks.push({ seq: k, index: 3 * k, atMs: k });
    expect(marks.atOrBefore(10)).toEqual({ mark: { seq: 3, index: 9, atMs: 3 }, at: 3 });
    expect(marks.atOrBefore(2).mark.seq).toBe(0);
    marks.dropBefore(3);
    expect(marks.size).toBe(3);
    expect(marks.atOrBefore(2).mark.seq).toBe(3);
  });

  it('thins out above its maximum, keeping the first and the last', () => {
    const marks = new Marks({ seq: 0, index: 0, atMs: 0 }, 8);
    for (let k = 1; k <= 9; k += 1) marks.push({ seq: k, index: k, atMs: 0 });
    expect(marks.size).toBeLessThanOrEqual(8);
    expect(marks.atOrBefore(0).mark.seq).toBe(0);
    expect(marks.atOrBefore(9).mark.seq).toBe(9);
  });
});

describe('stream settings', () => {
  it('creates a file stream that refuses deletes, with a duplicate window that outlasts a commit\'s retries', () => {
    const config = streamConfig(plan);
    expect(config).toMatchObject({ name: 'LOG', subjects: ['roster.log.LOG'], storage: StorageType.File, num_replicas: 3, deny_delete: true });
    expect(duplicateWindowMs(plan)).toBe(120_000);
    expect(duplicateWindowMs({ ...plan, publishRetryMsMax: 100_000 })).toBe(210_000);
    expect(config.duplicate_window).toBe(nanos(120_000));
  });

  it('adopts an existing stream as it is, naming where it differs', () => {
    const same = adoptStream(streamInfo(), plan);
    expect(same).toMatchObject({ subject: 'roster.log.LOG', strictSeq: true, differs: {} });
    const other = adoptStream(streamInfo({ storage: StorageType.Memory, num_replicas: 1, duplicate_window: nanos(1000) }), plan);
    expect(other.differs).toEqual({ storage: StorageType.Memory, replicas: 1, duplicateWindowNs: nanos(1000) });
  });

  it('uses an existing stream\'s single other subject, refuses a wildcard or several, and numbers loosely beside others', () => {
    expect(adoptStream(streamInfo({ subjects: ['log.other'] }), plan)).toMatchObject({ subject: 'log.other', differs: { subject: 'log.other' } });
    expect(() => adoptStream(streamInfo({ subjects: ['log.>'] }), plan)).toThrow(/exists without the subject roster.log.LOG/);
    expect(() => adoptStream(streamInfo({ subjects: ['a', 'b'] }), plan)).toThrow(/it has a, b/);
    expect(adoptStream(streamInfo({ subjects: ['roster.log.LOG', 'x'] }), plan).strictSeq).toBe(false);
  });

  it('watches the settings while the nodes run: a change said once with its effects, its return at info, a lost subject too', () => {
    const warned: unknown[] = [];
    const told: unknown[] = [];
    const logger = { ...silentLogger, warn: (o: unknown) => void warned.push(o), info: (o: unknown) => void told.push(o) };
    const seen = watchSettings(plan, logger, {});
    seen(streamInfo());
    expect([warned, told]).toEqual([[], []]);
    seen(streamInfo({ num_replicas: 1 }));
    seen(streamInfo({ num_replicas: 1 }));
    expect(warned).toEqual([expect.objectContaining({ changed: { replicas: 1 } })]);
    seen(streamInfo({ subjects: ['a', 'b'], num_replicas: 1 }));
    expect(warned[1]).toMatchObject({ changed: { subject: ['a', 'b'] }, effects: [expect.stringContaining('writes cannot be stored')] });
    seen(streamInfo());
    expect(told).toEqual([expect.objectContaining({ restored: ['replicas', 'subject'] })]);
    expect(warned).toHaveLength(2);
    // What was said at start is not said again.
    const started = watchSettings(plan, logger, { replicas: 1 });
    started(streamInfo({ num_replicas: 1 }));
    expect(warned).toHaveLength(2);
    expect(settingsDiffer(streamInfo({ deny_purge: true }), plan)).toEqual({ denyPurge: true });
  });

  it('keeps room for the headers below the server\'s max_payload', () => {
    expect(messageBytesMax(1024 * 1024)).toBe(1024 * 1024 - 1024);
    expect(messageBytesMax(undefined)).toBe(1024 * 1024 - 1024);
    expect(messageBytesMax(10)).toBe(1);
  });
});

describe('where a snapshot lets a node start', () => {
  const record: SnapshotRecord = {
    index: 10, seq: 8, seqIndex: 9, seqAtMs: 500, stream: 'LOG', streamCreated: '2026-01-01T00:00:00Z', node: 'a', data: {},
  };

  it('refuses a snapshot of another stream, of an earlier stream of the name, or past the stream\'s end', () => {
    expect(unusable(record, streamInfo(), 'LOG')).toBeUndefined();
    expect(unusable({ ...record, stream: 'X' }, streamInfo(), 'LOG')).toMatch(/belongs to stream X/);
    expect(unusable(record, { ...streamInfo(), created: 'later' } as StreamInfo, 'LOG')).toMatch(/earlier stream/);
    expect(unusable({ ...record, seq: 11 }, streamInfo(), 'LOG')).toMatch(/the stream ends at 10/);
  });

  it('starts after the snapshot\'s mark, or at the start, and refuses a stream that lost a message it needs', () => {
    const info = streamInfo({}, { first_seq: 9, last_seq: 20 });
    expect(startMark(info, record, 'LOG')).toEqual({ seq: 8, index: 9, atMs: 500 });
    expect(startMark(streamInfo(), undefined, 'LOG')).toEqual({ seq: 0, index: 0, atMs: 0 });
    expect(() => startMark(info, undefined, 'LOG')).toThrow(/starts at seq 9 but this node needs it from 1 \(no snapshot\)/);
    expect(() => startMark(streamInfo({}, { first_seq: 10, last_seq: 20 }), record, 'LOG')).toThrow(/snapshot at index 10/);
  });
});

describe('retries', () => {
  it('retries timeouts, connection trouble, 5xx answers and replicas not placeable yet; not a close, bad arguments or another 4xx answer', () => {
    expect(isTransient(new TimeoutError())).toBe(true);
    expect(isTransient(new Error('no responders'))).toBe(true);
    expect(isTransient(apiError(503, 10008))).toBe(true);
    expect(isTransient(apiError(400, 10058))).toBe(false);
    // Replicas that cannot be placed yet (servers still joining, one restarting): waited out, not fatal.
    expect(isTransient(apiError(400, 10005))).toBe(true);
    expect(isTransient(new ClosedConnectionError())).toBe(false);
    expect(isTransient(new InvalidArgumentError('payload too large'))).toBe(false);
  });

  it('backs off from 50 ms, doubling, up to the cap', () => {
    expect([0, 1, 2, 3, 10, 100].map((a) => backoffMs(a, 2000))).toEqual([50, 100, 200, 400, 2000, 2000]);
  });

  it('bounds a setup step that never answers (a silent object store consumer) and retries it as transient', async () => {
    let calls = 0;
    const step = (): Promise<string> => (++calls === 1 ? new Promise<string>(() => undefined) : Promise.resolve('ok'));
    expect(await retrying(silentLogger, 'snapshot', performance.now() + 5000, step, 100)).toBe('ok');
    expect(calls).toBe(2);
  });

  it('gives up at once on a failure that is not transient, and at the deadline on one that is', async () => {
    await expect(retrying(silentLogger, 'stream LOG', performance.now() + 5000, () => Promise.reject(apiError(400, 1)), 100))
      .rejects.toThrow(/^JetStreamLog\.open: stream LOG: api 400$/);
    const started = Date.now();
    await expect(retrying(silentLogger, 'bucket', performance.now() + 300, () => Promise.reject(new TimeoutError()), 100))
      .rejects.toThrow(/^JetStreamLog\.open: bucket:/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('tells whether a promise settles in time', async () => {
    await expect(withinMs(sleep(200), 20, 'late')).rejects.toThrow('late');
    expect(await withinMs(Promise.resolve(1), 100, 'late')).toBe(1);
    expect(await settlesWithin(Promise.reject(new Error('x')), 100)).toBe(true);
    expect(await settlesWithin(sleep(200), 20)).toBe(false);
  });
});
