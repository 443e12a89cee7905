// Goal: cluster identities (`<stream>@<creation time>`) compare as one log when nodes raced to create the
// stream (nats-server 2.9.10 answered each racing create with its own time, milliseconds apart), and as
// two when the names differ or the times are a second or more apart (another cluster's stream, or one
// deleted and created again). The times are the ones a failed CI run's nodes gossiped.
import { expect, test } from 'vitest';
import { sameCluster } from '../../cluster/heartbeat.ts';

test('one stream name with creation times within a second is one log; anything else is another', () => {
  const raced = ['ROSTER_LOG@2026-11-27T16:58:50.965419432Z', 'ROSTER_LOG@2026-11-27T16:58:50.978563795Z'] as const;
  expect(sameCluster(raced[0], raced[1])).toBe(true);
  expect(sameCluster(raced[0], raced[0])).toBe(true);
  expect(sameCluster(raced[0], 'ROSTER_LOG@2026-11-27T16:58:52.001000000Z')).toBe(false);
  expect(sameCluster(raced[0], 'OTHER_LOG@2026-11-27T16:58:50.965419432Z')).toBe(false);
  expect(sameCluster(raced[0], 'ROSTER_LOG@not-a-time')).toBe(false);
  expect(sameCluster('ROSTER_LOG', raced[0])).toBe(false);
});
