// Goal: the JetStream log never removes an attachment (a large restore's snapshot file in the object store)
// while the stream holds a message naming it: a node started later replays the stream and fetches each one.
// Five restores in a row on one node, none purged, then a second node opens on the stream from its start and
// applies every restore from its attachment.
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { LogEntry } from '../../src/ports/log.ts';
import { collect } from '../log/compliance.ts';
import { useSuiteLogs, useSuiteNats } from '../support/jetstream.ts';
import { until } from '../support/until.ts';

const suite = useSuiteNats(1);
const logs = useSuiteLogs('att_', () => suite.nats.urls);

/** A file as large as a restore stores beside the log, distinct for each `k`. */
function fileOf(k: number): { bytes: Buffer; sha256: string } {
  const bytes = Buffer.alloc(300_000, `snapshot ${k};`);
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

const restores = (entries: readonly LogEntry[]) => entries.filter((e) => e.cmd.t === 'state.restore');

describe('JetStream log attachments', () => {
  test('five restores with nothing purged: a node opened later fetches every attachment the stream names', async () => {
    const n1 = logs.make('n1');
    await n1.open();
    const seen = collect(n1);
    for (let k = 1; k <= 5; k += 1) {
      const { bytes, sha256 } = fileOf(k);
      const name = await n1.storeAttachment(bytes, sha256);
      await n1.append([{ pid: `n1-restore-${k}`, cmd: { t: 'state.restore', attachment: { name, sha256 } } }]);
      await until(`restore ${k} read back`, async () => (restores(seen).length === k ? true : undefined));
      n1.loadAttachment(name);
    }

    const n2 = logs.make('n2');
    await n2.open();
    const replayed = collect(n2);
    await until('the second node replays five restores', async () => (restores(replayed).length === 5 ? true : undefined), 15_000);
    for (const [k, e] of restores(replayed).entries()) {
      const named = (e.cmd as { attachment: { name: string; sha256: string } }).attachment;
      expect(named.sha256).toBe(fileOf(k + 1).sha256);
      expect(createHash('sha256').update(n2.loadAttachment(named.name)).digest('hex')).toBe(named.sha256);
    }
    expect(restores(replayed)).toHaveLength(5);
  });
});
