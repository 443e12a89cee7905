// Goal: blocking reads, consistency and the lock recipe (consul-compat §3, §6) written once and run in both
// dialects — the consul dialect driven by the real npm `consul` 2.0.1 client, the seed dialect over raw HTTP.
// A wait of 0 or less is the default wait in both, as in Consul (RPCQueryTimeout), not an answer at once.
import { describe, expect, test } from 'vitest';
import { expectError, sleep } from '../support/in-process.ts';
import { type Raw, type Entry, lockFlags, type Driver, expectText, expectJson, expectIndexHeaders, rawFlags, until, dialects, consulKvSuite } from '../support/consul-kv.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  const isConsul = dialect === 'consul';
  let raw: Raw;
  let d: Driver;
  const { uniq, expectFailure, expectRefused } = consulKvSuite(dialect, (s) => ({ raw, d } = s));

  // ----------------------------------------------------------------------------------------------
  describe('3. blocking reads and consistency', () => {
    test('watch: a change on create and on each write, indexes increase, end() stops it', async () => {
      const key = uniq('watched');
      const w = d.watch(key, '2s');
      try {
        await until(() => w.changes.length >= 1);
        expect(w.changes[0]!.entry).toBeUndefined(); // missing key: the first answer is the 404's index

        for (const [i, v] of ['v1', 'v2', 'v3'].entries()) {
          expect((await d.set(key, v)).ok).toBe(true);
          await until(() => w.changes.length >= i + 2);
          expect(w.changes[i + 1]!.entry).toMatchObject({ Key: key, Value: v });
        }
        const indexes = w.changes.map((c) => c.index);
        for (let i = 1; i < indexes.length; i++) expect(indexes[i]!).toBeGreaterThan(indexes[i - 1]!);
        expect(w.changes.at(-1)!.index).toBe((await d.get(key))!.ModifyIndex);
        // A write to another key does not count as a change of this one.
        expect((await d.set(uniq('unrelated'), 'x')).ok).toBe(true);
      } finally {
        w.end();
      }
      expect(w.ended()).toBe(true);
      const seen = w.changes.length;
      expect(seen).toBe(4);
      expect((await d.set(key, 'after-end')).ok).toBe(true);
      await sleep(300);
      expect(w.changes.length).toBe(seen);
      expect(w.errors).toEqual([]);
    });

    test('a wait of 0, 0s or -1s is the default wait (5 min), as Consul takes a wait of 0 or less: the GET stays parked until a write wakes it', async () => {
      const key = uniq('wait-zero');
      expect((await d.set(key, 'a')).ok).toBe(true);
      for (const wait of ['0', '0s', '-1s']) {
        const i0 = expectIndexHeaders(await raw.get(`/v1/kv/${key}`));
        let answered = false;
        const parked = raw.get(`/v1/kv/${key}?index=${i0}&wait=${wait}`).then((r) => { answered = true; return r; });
        await sleep(400);
        expect(answered, `wait=${wait}`).toBe(false);
        expect((await d.set(key, wait)).ok).toBe(true);
        const woke = await parked;
        expect(woke.status).toBe(200);
        expect(expectIndexHeaders(woke)).toBeGreaterThan(i0);
      }
    });

    test('raw blocking GET: wakes on a write with the new index; times out with the same index', async () => {
      const key = uniq('raw-block');
      expect((await d.set(key, 'a')).ok).toBe(true);
      const first = await raw.get(`/v1/kv/${key}`);
      const i0 = expectIndexHeaders(first);
      const parked = raw.get(`/v1/kv/${key}?index=${i0}&wait=5s`);
      await sleep(150);
      expect((await d.set(key, 'b')).ok).toBe(true);
      const woke = await parked;
      expect(woke.status).toBe(200);
      expect(expectIndexHeaders(woke)).toBeGreaterThan(i0);
      expect(woke.json<Entry[]>()[0]!.Value).toBe(Buffer.from('b').toString('base64'));

      const i1 = expectIndexHeaders(woke);
      const idle = await raw.get(`/v1/kv/${key}?index=${i1}&wait=300ms`);
      expect(idle.status).toBe(200);
      expect(expectIndexHeaders(idle)).toBe(i1);

      // The blocking read of the driver (the client with index+wait in consul).
      const r = await d.read(key, i1, '300ms');
      expect(r.index).toBe(i1);
      expect(r.entry!.Value).toBe('b');
    });

    test('?stale and ?consistent answer; both together, bad max_stale, bad index and wait are 400', async () => {
      const key = uniq('consistency');
      expect((await d.set(key, 'c')).ok).toBe(true);
      expect((await d.get(key, { stale: true }))!.Value).toBe('c');
      expect((await d.get(key, { consistent: true }))!.Value).toBe('c');
      for (const q of ['stale', 'consistent', 'stale=1', 'consistent=1', 'max_stale=5s', 'stale&max_stale=1m', 'leader']) {
        const r = await raw.get(`/v1/kv/${key}?${q}`);
        expect(r.status, `${q}: ${r.text}`).toBe(200);
        expectIndexHeaders(r);
      }

      const both = await raw.get(`/v1/kv/${key}?stale&consistent`);
      const maxStale = await raw.get(`/v1/kv/${key}?max_stale=abc`);
      const badIndex = await raw.get(`/v1/kv/${key}?index=abc`);
      const badWait = await raw.get(`/v1/kv/${key}?index=1&wait=abc`);
      if (isConsul) {
        expectText(both, 400, 'Cannot specify ?stale with ?consistent, conflicting semantics.');
        expectText(maxStale, 400, 'Invalid max_stale value "abc"');
        expectText(badIndex, 400, 'Invalid index');
        expectText(badWait, 400, 'Invalid wait time');
      } else {
        expectError(both, 400, 1009);
        expectError(maxStale, 400, 1009);
        expect(expectError(badIndex, 400, 1009).details).toHaveProperty('index');
        expect(expectError(badWait, 400, 1009).details).toHaveProperty('wait');
      }
    });

    test('?dc: own datacenter answers, another one fails', async () => {
      const key = uniq('dc');
      expect((await d.set(key, 'd')).ok).toBe(true);
      expect((await d.get(key, { dc: 'dc1' }))!.Value).toBe('d');
      // kv.get rejects through papi's `next(err)` path, which prefixes `consul: kv.get:`.
      await expectFailure(d.get(key, { dc: 'other' }), 500, 'consul: kv.get: No path to datacenter', 503, 1016);
      const r = await raw.get(`/v1/kv/${key}?dc=other`);
      if (isConsul) expectText(r, 500, 'No path to datacenter');
      else expectError(r, 503, 1016);
      const put = await raw.put(`/v1/kv/${key}?dc=other`, 'z');
      if (isConsul) expectText(put, 500, 'No path to datacenter');
      else expectError(put, 503, 1016);
      expect((await d.get(key))!.Value).toBe('d');
    });

    test('tokens are accepted and ignored: ?token=, X-Consul-Token, Authorization: Bearer', async () => {
      const key = uniq('token');
      expect((await d.set(key, 't')).ok).toBe(true);
      expect((await d.get(key, { token: 'x' }))!.Value).toBe('t');
      for (const [path, headers] of [
        [`/v1/kv/${key}?token=x`, {}],
        [`/v1/kv/${key}`, { 'X-Consul-Token': 'x' }],
        [`/v1/kv/${key}`, { Authorization: 'Bearer x' }],
      ] as [string, Record<string, string>][]) {
        const r = await raw.get(path, headers);
        expect(r.status, `${path} ${JSON.stringify(headers)}: ${r.text}`).toBe(200);
        if (isConsul) expectJson(r);
      }
      const put = await raw.put(`/v1/kv/${key}?token=x`, 'u', { 'X-Consul-Token': 'x' });
      expect(put.status, put.text).toBe(200);
      expect(put.text).toBe('true');
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('4. the lock recipe (consul-compat §3.2 Go helper / §6 node-consul 0.40)', () => {
    const lockWait = '5s';
    /** The Go helper waits 5 s after a lock-delay refusal; shortened for the test. */
    const retryAfterDelayMs = 200;
    /** Each loop of the recipe is bounded. */
    const attemptsMax = 100;

    /** One contender: a TTL session renewed periodically, blocking reads until unlocked, acquire with the helper's flags. */
    class Contender {
      sid = '';
      renewals = 0;
      renewErrors: unknown[] = [];
      /** Why acquires were refused: 'held' (someone holds it) or 'delay' (unlocked but refused: lock-delay). */
      refusals: ('held' | 'delay')[] = [];
      seedReasons: (string | undefined)[] = [];
      /** Reads that found the key held by someone. */
      sawHeld = 0;
      private timer: NodeJS.Timeout | undefined;
      constructor(readonly name: string, readonly key: string) {}

      async open(): Promise<void> {
        this.sid = await d.createSession({ name: this.name, ttl: '15s', lockdelay: '1s' });
        expect((await d.renew(this.sid))[0]!.ID).toBe(this.sid);
        this.timer = setInterval(() => {
          d.renew(this.sid).then(() => { this.renewals++; }, (err) => { this.renewErrors.push(err); });
        }, 500);
      }

      stopRenewing(): void {
        clearInterval(this.timer);
      }

      async lock(): Promise<void> {
        let index = 0;
        for (let attempt = 0; attempt < attemptsMax; attempt++) {
          // WAIT: block until the key has no Session.
          let r = await d.read(this.key, index, lockWait);
          for (let n = 0; r.entry?.Session; n++) {
            if (n >= attemptsMax) throw new Error(`${this.name}: lock never freed`);
            this.sawHeld++;
            r = await d.read(this.key, r.index, lockWait);
          }
          if (r.entry && (await rawFlags(raw, this.key)) !== lockFlags) throw new Error('Existing key does not match lock use');
          const v = await d.set(this.key, this.name, { flags: lockFlags, acquire: this.sid });
          if (v.ok) return;
          this.seedReasons.push(v.reason);
          // Why did it fail? Held → long-poll on its index; unlocked → lock-delay, timed retry.
          const again = await d.read(this.key, 0, lockWait);
          if (again.entry?.Session) {
            this.sawHeld++;
            this.refusals.push('held');
            index = again.index;
          } else {
            this.refusals.push('delay');
            index = 0;
            await sleep(retryAfterDelayMs);
          }
        }
        throw new Error(`${this.name}: lock not acquired in ${attemptsMax} attempts`);
      }

      async unlock(): Promise<void> {
        expect((await d.set(this.key, this.name, { flags: lockFlags, release: this.sid })).ok).toBe(true);
      }

      async close(): Promise<void> {
        this.stopRenewing();
        await d.destroy(this.sid);
      }
    }

    test('three contenders take the lock in turn: never two holders, LockIndex +1 per acquisition, flags exact', async () => {
      const key = uniq('recipe');
      const contenders = ['alpha', 'beta', 'gamma'].map((n) => new Contender(n, key));
      await Promise.all(contenders.map((c) => c.open()));
      const holders = new Set<string>();
      let overlaps = 0;
      const lockIndexes: number[] = [];
      const order: string[] = [];
      const rounds = 2;

      const run = async (c: Contender) => {
        for (let i = 0; i < rounds; i++) {
          await c.lock();
          if (holders.size > 0) overlaps++;
          holders.add(c.name);
          order.push(c.name);
          const e = (await d.get(key))!;
          expect(e).toMatchObject({ Session: c.sid, Value: c.name });
          lockIndexes.push(e.LockIndex);
          expect(await rawFlags(raw, key)).toBe(lockFlags);
          await sleep(40);
          holders.delete(c.name);
          await c.unlock();
        }
      };
      await Promise.all(contenders.map(run));

      expect(overlaps).toBe(0);
      expect(lockIndexes).toEqual(Array.from({ length: contenders.length * rounds }, (_, i) => i + 1));
      for (const c of contenders) expect(order.filter((n) => n === c.name)).toHaveLength(rounds);
      // Contention happened: someone found the lock held (refused, or parked on a blocking read).
      expect(contenders.reduce((n, c) => n + c.sawHeld, 0)).toBeGreaterThan(0);
      if (!isConsul) {
        for (const c of contenders) for (const r of c.seedReasons) expect(['held-by-other', 'lock-delay']).toContain(r);
      }

      const last = (await d.get(key))!;
      expect(last.Session).toBeUndefined();
      expect(last.LockIndex).toBe(contenders.length * rounds);
      expect(await rawFlags(raw, key)).toBe(lockFlags);
      for (const c of contenders) {
        c.stopRenewing();
        expect(c.renewErrors).toEqual([]);
        await c.close();
      }
    });

    test('a holder whose session is destroyed loses the lock to the next contender after the lock-delay', async () => {
      const key = uniq('recipe-loss');
      const a = new Contender('holder', key);
      const b = new Contender('next', key);
      await a.open();
      await b.open();
      await a.lock();
      const heldByA = (await d.get(key))!;
      expect(heldByA).toMatchObject({ Session: a.sid, LockIndex: 1 });

      const waiting = b.lock();
      await sleep(300); // let b park on its blocking read
      const t0 = Date.now();
      await a.close(); // destroy: the lock is released by invalidation, lock-delay 1s armed
      await waiting;
      const elapsedMs = Date.now() - t0;

      expect(elapsedMs).toBeGreaterThanOrEqual(950); // never before the lock-delay (1s) has passed
      expect(b.refusals).toContain('delay');
      if (!isConsul) expect(b.seedReasons).toContain('lock-delay');
      const e = (await d.get(key))!;
      expect(e).toMatchObject({ Session: b.sid, Value: 'next', LockIndex: 2 });
      expect(await rawFlags(raw, key)).toBe(lockFlags);

      // The dead session's release is refused; it holds nothing.
      expectRefused(await d.set(key, 'holder', { flags: lockFlags, release: a.sid }), 'not-holder');
      await b.unlock();
      expect((await d.get(key))!.Session).toBeUndefined();
      expect(b.renewErrors).toEqual([]);
      await b.close();
    });
  });
});
