// Goal: a commit JetStream refuses for want of storage on its first attempt is refused as unavailable at
// once (nothing of it stored), and the log says once that it cannot store writes; refused so on a later
// attempt, after one whose answer was lost, its outcome stays unknown. While storage is full an empty
// commit is published every probe interval, and the first publish stored says the log stores writes again.
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { TimeoutError } from '@nats-io/transport-node';
import { JetStreamApiError, type PubAck } from '@nats-io/jetstream';
import { isLogUnavailable, silentLogger } from '../../src/ports/index.ts';
import { emptyStats } from '../../cluster/jetstream/options.ts';
import { Publisher, type PublisherPorts } from '../../cluster/jetstream/publisher.ts';
import { isStorageExhausted, StorageWatch } from '../../cluster/jetstream/storage-full.ts';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

const insufficient = () => new JetStreamApiError({ code: 503, err_code: 10023, description: 'insufficient resources' });
const accountFull = () => new JetStreamApiError({ code: 400, err_code: 10002, description: 'resource limits exceeded for account' });

/**
 * A publisher whose client answers as listed (an Error is thrown; once the list is empty, "insufficient
 * resources"), with a storage watch that probes by publishing `[]`.
 */
function setup(answers: (Error | Partial<PubAck>)[]) {
  const told: boolean[] = [];
  const errors: string[] = [];
  let calls = 0;
  const js = {
    publish: () => {
      calls++;
      const next = answers.shift() ?? insufficient();
      return next instanceof Error ? Promise.reject(next) : Promise.resolve({ stream: 'LOG', seq: 1, duplicate: false, ...next } as PubAck);
    },
  } as PublisherPorts['js'];
  let publisher: Publisher;
  const storage = new StorageWatch({
    stream: 'LOG', logger: { ...silentLogger, error: (_o: unknown, msg?: string) => void errors.push(msg ?? '') }, probeEveryMs: 2_000,
    tell: (w) => void told.push(w), probe: () => publisher.publish('[]', publisher.nextId()).then(() => undefined, () => undefined), stopped: () => false,
  });
  publisher = new Publisher({
    js, stream: 'LOG', subject: 'roster.log.LOG', publishTimeoutMs: 100, publishRetryMsMax: 30_000, stats: emptyStats(), logger: silentLogger,
    failed: () => false, observer: () => undefined, storage,
  }, 'me.boot.');
  return { publisher, told, errors, answers, calls: () => calls };
}

test('what counts as storage exhausted', () => {
  expect(isStorageExhausted(insufficient())).toBe(true);
  expect(isStorageExhausted(accountFull())).toBe(true);
  expect(isStorageExhausted(new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' }))).toBe(false);
  expect(isStorageExhausted(new TimeoutError())).toBe(false);
});

test.each([['a server\'s limit', insufficient], ['the account\'s limit', accountFull]])(
  '%s: refused at once as unavailable, told once; probed until stored, then told writable', async (_, refusal) => {
    const s = setup([refusal(), refusal()]);
    const first = await s.publisher.publish('[x]', 'me.boot.a').catch((err: unknown) => err);
    expect(isLogUnavailable(first)).toBe(true);
    expect((first as { shortage: string }).shortage).toBe('storage');
    expect((first as Error).message).toContain('no JetStream storage left for the log');
    expect(s.calls()).toBe(1);
    const second = await s.publisher.publish('[y]', 'me.boot.b').catch((err: unknown) => err);
    expect(isLogUnavailable(second)).toBe(true);
    expect(s.told).toEqual([false]);
    expect(s.errors).toHaveLength(1);

    // The probe: refused once more (the listed default), then stored.
    await vi.advanceTimersByTimeAsync(2_000);
    expect(s.calls()).toBe(3);
    expect(s.told).toEqual([false]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.calls()).toBe(3);
    s.answers.push({ seq: 7 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.calls()).toBe(4);
    expect(s.told).toEqual([false, true]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.calls()).toBe(4);
  });

test('refused for want of storage after an attempt whose answer was lost: failed at once, outcome unknown', async () => {
  const s = setup([new TimeoutError(), insufficient()]);
  const settled = s.publisher.publish('[x]', 'me.boot.a').catch((err: unknown) => err);
  await vi.advanceTimersByTimeAsync(100);
  const err = await settled;
  expect(isLogUnavailable(err)).toBe(false);
  expect((err as Error).message).toMatch(/after 2 attempts .*outcome unknown.*insufficient resources/);
  expect(s.calls()).toBe(2);
  expect(s.told).toEqual([false]);
});
