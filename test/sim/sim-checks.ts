/**
 * The agent-check workload: an operator registers HTTP checks on random nodes through those nodes
 * (the agent API registers a check on the agent itself), re-registers them now and then (a new
 * generation restarts the runner) and deregisters a few. Each node's Runtime gets a simulated probe: it
 * answers after a short delay on that node, with a status drawn from the seed while the chaos lasts and
 * a fixed one per check afterwards, and the node's CheckOwner draws its probe jitter from the seed.
 * check-checker.ts holds the invariants.
 */
import type { CheckRegistration, Command } from '../../src/domain/commands.ts';
import type { CheckStatus, HealthCheck } from '../../src/domain/types.ts';
import type { Probe } from '../../src/ports/probe.ts';
import { passiveDefinition } from '../../src/state/index.ts';
import { CheckChecker, settledStatus } from './check-checker.ts';
import type { RuntimeExtras } from './sim-nodes.ts';
import type { SimNode, SimWorld } from './sim-world.ts';

/** Agent checks registered on one node at most at a time. */
const checksPerNodeMax = 3;
const statuses: readonly CheckStatus[] = ['passing', 'passing', 'warning', 'critical'];

export class AgentChecks {
  private readonly checker: CheckChecker;
  private registered = 0;
  private probes = 0;

  constructor(private readonly w: SimWorld) {
    this.checker = new CheckChecker(w);
  }

  /** What a node's Runtime needs to run its checks in the simulation. */
  runtimeOptions(n: SimNode, inc: number): RuntimeExtras {
    // Output-only results wait up to 2–6 s (check_update_interval 4 s), so held-back writes race the probes.
    return { probeFor: (check) => this.probe(n, inc, check), random: () => this.w.prng.next(), checks: { updateIntervalMs: 4_000 } };
  }

  schedule(): void {
    this.w.sched.at(this.w.prng.int(2_000, 4_000), 'checks operator', () => this.operate());
  }

  afterStep(): void {
    this.checker.afterStep();
  }

  /** The quiet phase's checks of the checks on `nodes` (a node cut off from the stream cannot report its own). */
  final(nodes: ReadonlySet<string>): void {
    this.checker.final(nodes);
  }

  private operate(): void {
    const { w } = this;
    if (!w.chaos) return;
    const p = w.prng;
    const n = w.nodes.get(p.pick(w.names))!;
    const r = p.next();
    w.sched.after(p.int(2_000, 6_000), 'checks operator', () => this.operate());
    if (!n.up) return;
    w.sched.after(p.int(1, 20), `checks operator→${n.name}`, () => {
      const mine = n.runtime!.state.checksOfNode(n.name).filter((c) => c.source === 'agent');
      let cmd: Command;
      if (mine.length > 0 && r < 0.12) cmd = { t: 'check.deregister', node: n.name, checkId: w.prng.pick(mine).checkId };
      else if (mine.length > 0 && (r < 0.35 || mine.length >= checksPerNodeMax)) cmd = this.register(n, w.prng.pick(mine).checkId);
      else cmd = this.register(n, `chk-${n.name}-${++this.registered}`);
      n.runtime!.propose(cmd).then((result) => w.checker.onAck(n.name, cmd, w.pidOf.get(cmd), result), () => {});
    }, n.name, n.inc);
  }

  private register(n: SimNode, checkId: string): Command {
    const intervalMs = this.w.prng.int(1, 5) * 1_000;
    const check: CheckRegistration = {
      checkId, name: checkId, notes: '', status: 'critical', output: '', serviceId: '', type: 'http',
      definition: { ...passiveDefinition, intervalMs, interval: `${intervalMs / 1000}s`, timeoutMs: 1_000, timeout: '1s', http: `http://${n.name}/health` },
    };
    return { t: 'check.register', node: n.name, check };
  }

  /** The probe of `check` on node `n`: it answers after a short delay on that node (never, if the node crashes first). */
  private probe(n: SimNode, inc: number, check: HealthCheck): Probe {
    return (signal) => {
      const mine = this.checker.probeStarted(n, inc, check, signal);
      return new Promise((resolve) => {
        this.w.sched.after(this.w.prng.int(5, 400), `probe ${n.name} ${check.checkId}`, () => {
          const chaos = this.w.chaos;
          const status = chaos ? this.w.prng.pick(statuses) : settledStatus(check.checkId);
          const output = chaos ? `${n.name}#${inc} probe ${++this.probes}` : 'settled';
          this.checker.probeReturned(check, mine, status, output);
          resolve({ status, output });
        }, n.name, inc);
      });
    };
  }
}
