// Goal: an agent's own registration at start. A single node whose ID another node holds takes it over at
// once (a rename). A cluster node waits until gossip has heard the holder or the grace is over, and takes
// the ID over only when the holder is not a live member with that ID: while one is, the node stays out of
// the catalog (saying so once) and nothing registers it; once the holder is gone it takes the ID over.
import { expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { ManualClock } from '../../src/ports/clock.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import type { Member } from '../../src/ports/membership.ts';
import { SelfRegistration, selfRegistered, type Self } from '../../src/runtime/self-registration.ts';
import { apply, RegistryState } from '../../src/state/index.ts';

const self: Self = { name: 'copy', id: 'id-1', address: '10.0.0.2', meta: {} };
const member = (name: string, id: string, status: Member['status']): Member => ({ name, id, http: `${name}:8500`, grpc: `${name}:8502`, status, lastHeardMs: 0, commandLevel: 4 });

/** A registry whose node `holder` holds id-1, and a registration over it; proposals apply at once. */
function setup(clustered: boolean) {
  const state = new RegistryState();
  const clock = new ManualClock();
  const warned: string[] = [];
  let members: Member[] = [];
  let released: () => void = () => {};
  const grace = new Promise<void>((resolve) => { released = resolve; });
  const propose = (cmd: Command) => Promise.resolve(apply(state, { index: state.index + 1, atMs: clock.nowMs(), pid: `p${state.index}`, cmd }).result);
  const registration = new SelfRegistration({
    self, clock, clustered, state: () => state, members: () => members, propose,
    logger: { ...silentLogger, warn: (_o: unknown, msg?: string) => void warned.push(msg ?? '') },
    heardOrGraceOver: () => grace, onceWritable: (_what, write) => write(), running: () => true,
  });
  return { state, clock, warned, registration, propose, release: () => released(), setMembers: (m: Member[]) => { members = m; } };
}

async function withHolder(clustered: boolean) {
  const s = setup(clustered);
  await s.propose({ t: 'catalog.register', node: 'holder', id: 'id-1', address: '10.0.0.1', meta: {}, checks: [] });
  return s;
}

test('a single node takes its ID over at once: the holder goes', async () => {
  const s = await withHolder(false);
  await s.registration.atStart();
  expect([...s.state.nodes.keys()]).toEqual(['copy']);
  expect(selfRegistered(s.state, self)).toBe(true);
  expect(s.registration.waiting).toBe(false);
});

test('a cluster node stays out while the holder is a live member with its ID, then takes the ID over', async () => {
  const s = await withHolder(true);
  s.setMembers([member('holder', 'ID-1', 'alive')]);
  await s.registration.atStart();
  expect(s.registration.waiting).toBe(true);
  s.release();
  await Promise.resolve();
  await new Promise((r) => setImmediate(r));
  expect([...s.state.nodes.keys()]).toEqual(['holder']);
  expect(s.warned.filter((w) => w.includes('held by the live node holder'))).toHaveLength(1);
  // Entries touching this node meanwhile register nothing.
  s.registration.entriesApplied();
  await new Promise((r) => setImmediate(r));
  expect([...s.state.nodes.keys()]).toEqual(['holder']);

  s.clock.advance(1_000);
  await new Promise((r) => setImmediate(r));
  expect([...s.state.nodes.keys()]).toEqual(['holder']);
  expect(s.warned.filter((w) => w.includes('held by the live node holder'))).toHaveLength(1);

  s.setMembers([member('holder', 'id-1', 'failed')]);
  s.clock.advance(1_000);
  await s.registration.done;
  expect([...s.state.nodes.keys()]).toEqual(['copy']);
  expect(s.registration.waiting).toBe(false);
});

test('a cluster node whose holder is not heard by the end of the grace, or is live under another ID, takes the ID over', async () => {
  for (const members of [[], [member('holder', 'id-other', 'alive')]]) {
    const s = await withHolder(true);
    s.setMembers(members);
    await s.registration.atStart();
    s.release();
    await s.registration.done;
    expect([...s.state.nodes.keys()]).toEqual(['copy']);
  }
});

test('with no other holder of its ID, a cluster node registers at once', async () => {
  const s = setup(true);
  await s.registration.atStart();
  expect(s.registration.waiting).toBe(false);
  expect(selfRegistered(s.state, self)).toBe(true);
});
