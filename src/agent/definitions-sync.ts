/**
 * Bringing the registry in line with the config file's services and checks, at start and on a reload, and
 * the agent's record of which definitions came from the file.
 *
 * A sync is planned (what to deregister, what to register), judged whole against the registry as it is
 * (every check's ServiceID names a service of the file or one that stays registered on this node; the
 * state quota takes the new definitions), and only then proposed, one write per definition: the log has
 * no write that registers several services and checks at once. A write the registry still refuses then
 * (a service deregistered through the API in between, a full disk) stops the sync there; the record stays
 * true, so a later reload or start removes what came from the file. The record holds every definition
 * whose registration was proposed and not refused, until a deregistration of it was proposed; it is kept
 * in the data dir (definitions-record.ts) so that a start knows what an earlier run registered from the file.
 */
import { ConfigError } from '../config.ts';
import type { CheckRegistration, Command } from '../domain/commands.ts';
import type { ParsedService } from '../http/definitions.ts';
import type { Runtime } from '../runtime/index.ts';

/** The config file's definitions, validated (local-definitions.ts parses them). */
export interface LocalDefinitions {
  services: ParsedService[];
  checks: CheckRegistration[];
}

/**
 * What came from the config file, by ID: the definition as last registered (its JSON), or '' when it must
 * be registered again whatever it holds (read back at start, or a write whose outcome is unknown).
 */
export interface DefinitionsRecord { services: Map<string, string>; checks: Map<string, string> }

/** The record's IDs, as kept between starts. */
export interface RecordedIds { services: string[]; checks: string[] }

/** Where the record is kept between starts. */
export interface RecordStore {
  read(): RecordedIds | undefined;
  /** Never rejects: a record that cannot be written is logged, and the agent's own copy stays true. */
  write(ids: RecordedIds): Promise<void>;
}

export function recordOf(ids: RecordedIds | undefined): DefinitionsRecord {
  return { services: new Map(ids?.services.map((id) => [id, ''])), checks: new Map(ids?.checks.map((id) => [id, ''])) };
}

export function recordedIds(record: DefinitionsRecord): RecordedIds {
  return { services: [...record.services.keys()], checks: [...record.checks.keys()] };
}

interface Step { kind: 'service' | 'check'; id: string; json: string; cmd: Command }

/** A sync's writes: deregistrations (checks, then services), then registrations (services, then checks). */
export interface SyncPlan { node: string; removals: Step[]; registrations: Step[]; after: LocalDefinitions }

/** The IDs of the services and checks registered on the node now. */
export interface Registered { services: ReadonlySet<string>; checks: ReadonlySet<string> }

export function registeredOn(runtime: Runtime, node: string): Registered {
  const state = runtime.state;
  return {
    services: new Set(state.servicesOfNode(node).map((s) => s.id)),
    checks: new Set(state.checksOfNode(node).map((c) => c.checkId)),
  };
}

/**
 * Plans bringing the registry from `record` to `after`: definitions new in the file are registered, changed
 * ones registered again (a service replacing its checks, so a check of the file on a service registered
 * again is registered again too), unchanged ones missing from `registered` (deregistered through the API)
 * registered again as Consul's reload does, and recorded ones no longer in the file deregistered.
 */
export function planSync(node: string, record: DefinitionsRecord, after: LocalDefinitions, registered: Registered): SyncPlan {
  const services = new Set(after.services.map((s) => s.service.id));
  const checks = new Set(after.checks.map((c) => c.checkId));
  const removals: Step[] = [
    ...[...record.checks.keys()].filter((id) => !checks.has(id))
      .map((id): Step => ({ kind: 'check', id, json: '', cmd: { t: 'check.deregister', node, checkId: id } })),
    ...[...record.services.keys()].filter((id) => !services.has(id))
      .map((id): Step => ({ kind: 'service', id, json: '', cmd: { t: 'service.deregister', node, serviceId: id } })),
  ];
  const serviceSteps = after.services.map((parsed): Step => ({
    kind: 'service', id: parsed.service.id, json: JSON.stringify(parsed),
    cmd: { t: 'service.register', node, service: parsed.service, checks: parsed.checks, replaceExistingChecks: true },
  })).filter((step, i) => record.services.get(step.id) !== step.json || !registered.services.has(step.id)
    || after.services[i]!.checks.some((check) => !registered.checks.has(check.checkId)));
  const again = new Set(serviceSteps.map((step) => step.id));
  const checkSteps = after.checks
    .filter((check) => record.checks.get(check.checkId) !== JSON.stringify(check) || again.has(check.serviceId)
      || !registered.checks.has(check.checkId))
    .map((check): Step => ({ kind: 'check', id: check.checkId, json: JSON.stringify(check), cmd: { t: 'check.register', node, check } }));
  return { node, removals, registrations: [...serviceSteps, ...checkSteps], after };
}

/**
 * The checks of the file whose ServiceID names no service of the file: the agent takes each only if that
 * service is registered on its node (through the API) and stays so; `roster validate`, which has no agent
 * to ask, names them.
 */
export function foreignServiceChecks(defs: LocalDefinitions): CheckRegistration[] {
  const services = new Set(defs.services.map((s) => s.service.id));
  return defs.checks.filter((check) => check.serviceId !== '' && !services.has(check.serviceId));
}

/**
 * Judges a planned sync against the registry as it is, before anything is written: a ConfigError names
 * the first definition the registry would refuse. `stateBytesMax` is the state quota the file sets.
 */
export function judgeSync(runtime: Runtime, plan: SyncPlan, stateBytesMax: number): void {
  const state = runtime.state;
  const removed = new Set(plan.removals.filter((step) => step.kind === 'service').map((step) => step.id));
  const staying = new Set(state.servicesOfNode(plan.node).map((s) => s.id).filter((id) => !removed.has(id)));
  for (const check of foreignServiceChecks(plan.after)) {
    if (!staying.has(check.serviceId)) {
      throw new ConfigError(`--config-file: check "${check.checkId}": its ServiceID "${check.serviceId}" names no service of the file nor one that stays registered on this node`);
    }
  }
  for (const step of plan.registrations) {
    const refusal = runtime.quota.refusal([step.cmd], state, stateBytesMax);
    if (refusal !== undefined) throw new ConfigError(`--config-file: ${step.kind} "${step.id}" would not be registered: ${refusal.message}`);
  }
}

/**
 * Proposes a planned sync, keeping `record` true at every step (and in `store`: before the writes, with
 * what they may register added, and after them). The first write the registry refuses stops it with a
 * ConfigError naming the definition; a write whose outcome is unknown stops it with the log's error.
 */
export async function runSync(runtime: Runtime, plan: SyncPlan, record: DefinitionsRecord, store: RecordStore | undefined): Promise<void> {
  const mapOf = (step: Step) => (step.kind === 'service' ? record.services : record.checks);
  const ahead = recordedIds(record);
  for (const step of plan.registrations) {
    if (!mapOf(step).has(step.id)) (step.kind === 'service' ? ahead.services : ahead.checks).push(step.id);
  }
  await store?.write(ahead);
  try {
    // A failed deregistration can only mean it is gone already (deregistered through the API): the wanted outcome.
    for (const step of plan.removals) {
      await runtime.propose(step.cmd);
      mapOf(step).delete(step.id);
    }
    for (const step of plan.registrations) {
      const map = mapOf(step);
      const before = map.get(step.id);
      // Until the outcome is known the definition may be registered: recorded, to be registered again.
      map.set(step.id, '');
      const result = await runtime.propose(step.cmd);
      if (result.ok) {
        map.set(step.id, step.json);
        continue;
      }
      if (before === undefined) map.delete(step.id);
      else map.set(step.id, before);
      throw new ConfigError(`--config-file: ${step.kind} "${step.id}" was not registered: ${result.reason}${result.detail ? ` ${result.detail}` : ''}`);
    }
  } finally {
    await store?.write(recordedIds(record));
  }
}
