/**
 * The invariants of check owners (src/runtime/check-owner.ts). A check runs on the agent it was
 * registered with and nowhere else:
 *   - check-owner:  after every step, each running node (started, not stopping) runs exactly the agent
 *                   checks its applied state gives it, no more, no fewer; a probe runs only on the check's
 *                   own node, and never two probes of one check at once (a restarted runner's old probe
 *                   is aborted first).
 *   - check-result: every probe result in the log is one that a probe of the check's own node returned
 *                   for that registration (generation): nobody else proposes a check's results.
 *   - check-status: a committed probe result for the current registration sets the check's status to
 *                   it (the simulation's checks have no thresholds), and at the end every check has the
 *                   status its owner's probes settled on in the quiet phase.
 */
import type { Command } from '../../src/domain/commands.ts';
import type { CheckStatus, HealthCheck } from '../../src/domain/types.ts';
import type { LogEntry } from '../../src/ports/log.ts';
import type { RegistryState, Result } from '../../src/state/index.ts';
import type { SimNode, SimWorld } from './sim-world.ts';

interface Probing {
  node: string;
  inc: number;
  signal: AbortSignal | undefined;
}

const statuses: readonly CheckStatus[] = ['passing', 'warning', 'critical'];

/** The status a check's probes return once the chaos is over (fixed per check id). */
export function settledStatus(checkId: string): CheckStatus {
  let h = 0;
  for (const ch of checkId) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return statuses[h % statuses.length]!;
}

export class CheckChecker {
  /** Node/check/generation → the results (status and output) its owner's probes returned. */
  private readonly returned = new Map<string, Set<string>>();
  private readonly probing = new Map<string, Probing[]>();

  constructor(private readonly w: SimWorld) {
    w.checker.entryWatchers.push((entry, ref, result) => this.onEntry(entry, ref, result));
  }

  /** A probe of `check` starts on node `n` (incarnation `inc`). */
  probeStarted(n: SimNode, inc: number, check: HealthCheck, signal: AbortSignal | undefined): Probing {
    const id = `${check.node}/${check.checkId}`;
    if (check.node !== n.name) this.w.checker.report('check-owner', `${n.name}#${inc} probes ${id}, a check of another node`);
    const live = (this.probing.get(id) ?? []).filter((p) => {
      const node = this.w.nodes.get(p.node)!;
      return node.up && node.inc === p.inc && !p.signal?.aborted;
    });
    if (live.length > 0) this.w.checker.report('check-owner', `${n.name}#${inc} probes ${id} while ${live.map((p) => `${p.node}#${p.inc}`).join(', ')} still probes it`);
    const mine: Probing = { node: n.name, inc, signal };
    this.probing.set(id, [...live, mine]);
    return mine;
  }

  probeReturned(check: HealthCheck, mine: Probing, status: CheckStatus, output: string): void {
    const id = `${check.node}/${check.checkId}`;
    this.probing.set(id, (this.probing.get(id) ?? []).filter((p) => p !== mine));
    const key = `${check.node}/${check.checkId}/${check.generation}`;
    let set = this.returned.get(key);
    if (set === undefined) this.returned.set(key, (set = new Set()));
    set.add(`${status}|${output}`);
  }

  afterStep(): void {
    for (const n of this.w.nodes.values()) {
      const rt = n.runtime;
      if (!n.up || !n.started || rt === undefined || rt.isStopping) continue;
      const running = rt.checkOwner.running().sort();
      const given = rt.state.checksOfNode(n.name).filter((c) => c.source === 'agent' && c.type !== '').map((c) => c.checkId).sort();
      if (running.join() !== given.join()) {
        this.w.checker.report('check-owner', `${n.name}#${n.inc} runs [${running.join(', ')}] but its state gives it [${given.join(', ')}]`);
      }
    }
  }

  /** Every agent check ends with the status its owner's probes settled on. */
  final(nodes: ReadonlySet<string>): void {
    for (const c of this.w.checker.ref.checks.values()) {
      if (c.source !== 'agent' || c.type === '' || !nodes.has(c.node)) continue;
      const want = settledStatus(c.checkId);
      if (c.status !== want) this.w.checker.report('check-status', `${c.node}/${c.checkId} ends ${c.status}, its probes settled on ${want}`);
    }
  }

  private onEntry(entry: LogEntry, ref: RegistryState, result: Result): void {
    const cmd: Command = entry.cmd;
    if (cmd.t !== 'check.update' || cmd.via !== 'probe') return;
    this.w.checker.stats.probeUpdates++;
    const id = `${cmd.node}/${cmd.checkId}`;
    if (!this.returned.get(`${id}/${cmd.generation}`)?.has(`${cmd.status}|${cmd.output}`)) {
      this.w.checker.report('check-result', `entry ${entry.index} carries a result for ${id} (generation ${cmd.generation}) that no probe of ${cmd.node} returned: ${cmd.status} ${JSON.stringify(cmd.output)}`);
    }
    const check = ref.checkOf(cmd.node, cmd.checkId);
    if (result.ok && check !== undefined && check.generation === cmd.generation && check.status !== cmd.status) {
      this.w.checker.report('check-status', `entry ${entry.index}: ${id} is ${check.status} after its owner's result ${cmd.status}`);
    }
  }
}
