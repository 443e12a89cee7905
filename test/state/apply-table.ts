/**
 * The harness of the per-command apply tables (test/state/apply-*.test.ts): a case gives the commands
 * that build the state, the entry under test and what apply must answer — its result, its effects in
 * order, and what changed in state. Everything runs on the pure apply: no runtime, no log, no agent.
 * A failing case must change nothing a snapshot shows and yield no effects; each table file checks that
 * every command of its table has a case and every failure the command can return is reached by one.
 */
import { describe, expect, test } from 'vitest';
import type {
  CatalogCheck, CatalogRegister, CheckRegistration, Command, CommandTag, KvAcquire, KvSet, ServiceInput, SessionCreate,
} from '../../src/domain/commands.ts';
import type { CommandFailures, CommandMap, TagsOf } from '../../src/state/apply/types.ts';
import { apply, passiveDefinition, RegistryState, toSnapshotData, type Applied, type Effect, type Result } from '../../src/state/index.ts';

/** Entry time of the setup entries, unless one says otherwise. */
export const t0 = 1_000;

/** A setup entry: a command at t0, or at a time of its own. */
export type Given = Command | { at: number; cmd: Command };

interface CaseOf<T extends CommandTag> {
  name: string;
  /** Applied after `n1` is registered (index 1) with its gossipHealth check passing; from index 2 on. */
  given?: Given[];
  when: CommandMap[T];
  /** Entry time of `when` (t0 when absent). */
  at?: number;
  result: Result<CommandFailures[T]>;
  effects: Effect[];
  then?: (state: RegistryState) => void;
}

export type Case = { [T in CommandTag]: CaseOf<T> }[CommandTag];

/** Every failure each command can return, listed; a list missing one does not compile. */
export const failuresByTag = {
  'session.create': ['unknown-node', 'session-exists', 'unknown-check', 'check-critical'],
  'session.destroy': [],
  'session.renew': ['session-not-found'],
  'session.expire': ['stale'],
  'kv.set': [],
  'kv.cas': ['cas-mismatch'],
  'kv.acquire': ['invalid-session', 'lock-delay', 'held-by-other'],
  'kv.release': ['not-locked', 'not-holder'],
  'kv.delete': [],
  'kv.deleteCas': ['cas-mismatch'],
  'kv.deleteTree': [],
  'txn.kv': ['txn-failed'],
  'catalog.register': ['node-id-taken'],
  'catalog.deregister': ['unknown-node', 'unknown-check'],
  'check.register': ['unknown-node', 'unknown-service'],
  'check.deregister': ['unknown-check'],
  'check.update': ['unknown-check', 'stale'],
  'check.ttlExpire': ['unknown-check', 'stale'],
  'service.register': ['unknown-node'],
  'service.deregister': ['unknown-service'],
  'service.reap': ['stale', 'unknown-service'],
  barrier: [],
  'state.restore': [],
} as const satisfies { [T in CommandTag]: readonly CommandFailures[T][] };

type Unlisted = { [T in CommandTag]: Exclude<CommandFailures[T], (typeof failuresByTag)[T][number]> }[CommandTag];
const everyFailureListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyFailureListed;

/** Every command belongs to one of the tables (the barrier is in apply.test.ts): a new family needs a table. */
type Untabled = Exclude<CommandTag, TagsOf<'session' | 'kv' | 'txn' | 'check' | 'catalog' | 'service' | 'state'> | 'barrier'>;
const everyCommandTabled: [Untabled] extends [never] ? true : Untabled = true;
void everyCommandTabled;

/** The index the entry under test of `c` applies at. */
export function indexOf(c: { given?: Given[] }): number {
  return (c.given?.length ?? 0) + 2;
}

/** The state after the base entry and `given`. */
export function stateOf(given: Given[] = []): RegistryState {
  const state = new RegistryState();
  const entries: Given[] = [node('n1'), ...given];
  entries.forEach((g, i) => {
    const { at, cmd } = 'cmd' in g ? g : { at: t0, cmd: g };
    apply(state, { index: i + 1, atMs: at, pid: `p${i + 1}`, cmd });
  });
  return state;
}

/** Applies the case's entry and checks result, effects, state change and, for a failure, that nothing changed. */
export function check(c: Case): Applied {
  const state = stateOf(c.given);
  const before = toSnapshotData(state);
  const index = indexOf(c);
  const applied = apply(state, { index, atMs: c.at ?? t0, pid: 'when', cmd: c.when });
  expect(applied.result).toEqual(c.result);
  expect(applied.effects).toEqual(c.effects);
  if (!applied.result.ok) {
    const after = toSnapshotData(state);
    expect({ ...after, index: before.index, atMs: before.atMs }).toEqual(before);
  }
  c.then?.(state);
  return applied;
}

/** The cases of one table, by command: a command of the table without an entry does not compile. */
export type Table<P extends string> = { [T in TagsOf<P>]: Case[] };

/**
 * Runs a table: one test per case, grouped by command, and one that every case sits under its own
 * command and every failure each command can return is the result of one of its cases.
 */
export function runTable(title: string, table: Partial<Record<CommandTag, Case[]>>): void {
  const byTag = Object.entries(table) as [CommandTag, Case[]][];
  describe(title, () => {
    for (const [tag, cases] of byTag) {
      describe(tag, () => {
        for (const c of cases) test(c.name, () => { check(c); });
      });
    }
    test('every command has cases, and every failure it can return is reached', () => {
      for (const [tag, cases] of byTag) {
        expect(cases.length, `no case for ${tag}`).toBeGreaterThan(0);
        expect(cases.filter((c) => c.when.t !== tag).map((c) => c.name), `cases under ${tag} for another command`).toEqual([]);
        const reached = new Set(cases.flatMap((c) => (c.result.ok ? [] : [c.result.reason])));
        expect([...reached].sort(), `failures of ${tag}`).toEqual([...failuresByTag[tag]].sort());
      }
    });
  });
}

// ---------------------------------------------------------------- commands

export const gossip: CatalogCheck = { checkId: 'gossipHealth', name: 'Gossip Health Status', status: 'passing', notes: '', output: '' };

export function node(name: string, checks: CatalogCheck[] = [gossip], address = '10.0.0.1'): CatalogRegister {
  return { t: 'catalog.register', node: name, id: `id-${name}`, address, meta: {}, checks };
}

/** A session on n1 bound to gossipHealth, without TTL or lock delay, unless `over` says otherwise. */
export function session(id: string, over: Partial<SessionCreate> = {}): SessionCreate {
  return {
    t: 'session.create', id, node: 'n1', name: '', lockDelayNs: 0, behavior: 'release', ttl: '', ttlMs: 0,
    nodeChecks: ['gossipHealth'], serviceChecks: null, ...over,
  };
}

export const b64 = (text: string) => Buffer.from(text).toString('base64');

export function acquire(key: string, id: string, value: string | null = null): KvAcquire {
  return { t: 'kv.acquire', key, value, flags: '0', session: id };
}

export function set(key: string, value: string | null = null, flags = '0'): KvSet {
  return { t: 'kv.set', key, value, flags };
}

/** A check registration on its own (no service), passive unless `definition` says otherwise. */
export function registration(checkId: string, over: Partial<CheckRegistration> = {}): CheckRegistration {
  return { checkId, name: checkId, notes: '', status: 'passing', output: '', serviceId: '', type: 'ttl', definition: passiveDefinition, ...over };
}

export function service(id: string, over: Partial<ServiceInput> = {}): ServiceInput {
  return {
    id, service: id, kind: '', tags: [], address: '', port: 80, meta: {}, taggedAddresses: {},
    weights: { Passing: 1, Warning: 1 }, enableTagOverride: false, ...over,
  };
}
