// Goal: the serving status of each service name (the gRPC health service, the stream's serving_status)
// is recomputed after each batch only for the names the batch's catalog effects can have changed; after
// any sequence of catalog commands and check results, what it holds and what it told its listeners are
// what recomputing every name from the state gives — a check moved between services, a service renamed
// or deregistered, a node removed with its instances included.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { computeServingStatuses, ServingTracker } from '../../src/runtime/index.ts';
import type { CatalogEffect } from '../../src/runtime/serving.ts';
import { apply, RegistryState } from '../../src/state/index.ts';
import { node, registration, service } from './apply-table.ts';
import { catalogCommand, names } from './catalog-commands.ts';

/** A command, or a TTL result for the `pick`-th check in the state (whichever exists then). */
type Step = { cmd: Command } | { pick: number; status: 'passing' | 'warning' | 'critical' };

const step: fc.Arbitrary<Step> = fc.oneof(
  catalogCommand.map((cmd) => ({ cmd })),
  fc.record({ pick: fc.nat(), status: fc.constantFrom('passing' as const, 'warning' as const, 'critical' as const) }),
);

function commandOf(state: RegistryState, s: Step): Command | undefined {
  if ('cmd' in s) return s.cmd;
  const checks = [...state.checks.values()];
  if (checks.length === 0) return undefined;
  const c = checks[s.pick % checks.length]!;
  return { t: 'check.update', node: c.node, checkId: c.checkId, generation: c.generation, via: 'ttl', status: s.status, output: '' };
}

describe('serving statuses recomputed from a batch\'s effects', () => {
  test('hold what recomputing every name gives, and tell every change', () => {
    fc.assert(fc.property(fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 15 }), (batches) => {
      const state = new RegistryState();
      apply(state, { index: 1, atMs: 1_000, pid: 'p1', cmd: node('n1') });
      const tracker = new ServingTracker();
      tracker.start(state);
      const told = new Map<string, string | undefined>();
      tracker.subscribe((name, status) => told.set(name, status));
      for (const batch of batches) {
        const effects: CatalogEffect[] = [];
        for (const s of batch) {
          const cmd = commandOf(state, s);
          if (cmd === undefined) continue;
          const applied = apply(state, { index: state.index + 1, atMs: 1_000, pid: `p${state.index + 1}`, cmd });
          for (const e of applied.effects) if (e.t === 'service' || e.t === 'check' || e.t === 'node') effects.push(e);
        }
        tracker.update(state, effects);
        const all = computeServingStatuses(state);
        for (const name of names) {
          expect(tracker.get(name)).toBe(all.get(name));
          // What listeners were last told is the current status (or nothing was ever told: never registered).
          if (told.has(name)) expect(told.get(name)).toBe(all.get(name));
          else expect(all.get(name)).toBeUndefined();
        }
      }
    }), { numRuns: 300 });
  });
});

test('a critical check moved from one service to another changes both names', () => {
  const state = new RegistryState();
  const tracker = new ServingTracker();
  const run = (cmd: Command): CatalogEffect[] => {
    const applied = apply(state, { index: state.index + 1, atMs: 1_000, pid: `p${state.index + 1}`, cmd });
    expect(applied.result).toEqual({ ok: true });
    return applied.effects.filter((e): e is CatalogEffect => e.t === 'service' || e.t === 'check' || e.t === 'node');
  };
  run(node('n1'));
  run({ t: 'service.register', node: 'n1', service: service('a', { service: 'web' }), checks: [registration('m', { status: 'critical' })], replaceExistingChecks: false });
  run({ t: 'service.register', node: 'n1', service: service('b', { service: 'db' }), checks: [], replaceExistingChecks: false });
  tracker.start(state);
  expect([tracker.get('web'), tracker.get('db')]).toEqual(['NOT_SERVING', 'SERVING']);
  tracker.update(state, run({ t: 'check.register', node: 'n1', check: registration('m', { serviceId: 'b', status: 'critical' }) }));
  expect([tracker.get('web'), tracker.get('db')]).toEqual(['SERVING', 'NOT_SERVING']);
});
