// Goal: three GossipMembership nodes seeded by plain addresses see each other alive; a clean stop is seen as `left` at once, a SIGKILLed member as `failed` after about suspicionMs, and alive again when it restarts on its port.
// A node whose wall clock is set back an hour just after a member dies still sees it failed after about suspicionMs (silence is measured on the monotonic clock).
import { afterAll, describe, expect, test } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GossipMembership, type GossipMembershipOptions } from '../../cluster/gossip-membership.ts';
import type { Member, MemberStatus } from '../../src/ports/membership.ts';
import { SteppedSystemClock } from '../support/stepped-clock.ts';

const heartbeatMs = 250;
const suspicionMs = 1_500;
const redialMs = 500;
/** Bound on any "eventually" in this file. */
const waitMsMax = 10_000;
/** Allowed lateness of a failure: one sweep, gossip delay and a busy event loop. */
const failMarginMs = 1_500;

const repo = fileURLToPath(new URL('../../', import.meta.url));
const moduleUrl = pathToFileURL(fileURLToPath(new URL('../../cluster/gossip-membership.ts', import.meta.url))).href;

function identity(name: string) {
  return { name, id: `${name}-id`, http: `127.0.0.1:${name.charCodeAt(0)}80`, grpc: `127.0.0.1:${name.charCodeAt(0)}81` };
}

function options(name: string, seeds: string[], listen = '/ip4/127.0.0.1/tcp/0'): GossipMembershipOptions {
  return { self: identity(name), listen, seeds, heartbeatMs, suspicionMs, redialMs };
}

async function until<T>(what: string, probe: () => T | undefined, ms = waitMsMax): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function statusOf(members: readonly Pick<Member, 'name' | 'status'>[], name: string): MemberStatus | undefined {
  return members.find((m) => m.name === name)?.status;
}

/** A member in a child process, so it can die by SIGKILL without a word. It reports on stdout. */
class ChildMember {
  addrs: string[] = [];
  members: Pick<Member, 'name' | 'status'>[] = [];
  exited = false;
  private constructor(readonly proc: ChildProcess) {}

  static async start(opts: GossipMembershipOptions): Promise<ChildMember> {
    const code = `
      const { GossipMembership } = await import(process.env.MEMBERSHIP_MODULE);
      const m = new GossipMembership(JSON.parse(process.env.MEMBERSHIP_OPTIONS));
      const report = () => console.log(JSON.stringify({ members: m.members().map(({ name, status }) => ({ name, status })) }));
      m.onChange(report);
      await m.start();
      console.log(JSON.stringify({ addrs: m.addresses() }));
      report();
      process.on('SIGTERM', () => { void m.stop().then(() => process.exit(0)); });
    `;
    const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: repo,
      env: { ...process.env, MEMBERSHIP_MODULE: moduleUrl, MEMBERSHIP_OPTIONS: JSON.stringify(opts) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const child = new ChildMember(proc);
    proc.on('exit', () => { child.exited = true; });
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { addrs?: string[]; members?: Pick<Member, 'name' | 'status'>[] };
      if (msg.addrs) child.addrs = msg.addrs;
      if (msg.members) child.members = msg.members;
    });
    await until('the child member to listen', () => child.addrs.length > 0 || undefined, 20_000);
    return child;
  }

  alive(): string[] {
    return this.members.filter((m) => m.status === 'alive').map((m) => m.name).sort();
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    process.kill(this.proc.pid!, signal);
    await exited;
  }
}

describe('GossipMembership, three nodes on 127.0.0.1', () => {
  const inProcess: GossipMembership[] = [];
  const children: ChildMember[] = [];
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await Promise.all(inProcess.map((m) => m.stop()));
  });

  test('join, SIGKILL, restart on the same port, clean leave', async () => {
    const a = new GossipMembership(options('a', []));
    inProcess.push(a);
    await a.start();
    const aAddr = a.addresses()[0]!;
    const aHostPort = aAddr.replace(/^\/ip4\/([^/]+)\/tcp\/(\d+)$/, '$1:$2');
    expect(aHostPort).toMatch(/^127\.0\.0\.1:\d+$/);

    const b = new GossipMembership(options('b', [aHostPort])); // seeded with host:port
    inProcess.push(b);
    await b.start();
    const changesAtA: Member[][] = [];
    a.onChange((ms) => changesAtA.push([...ms]));

    // c joins late and is seeded with plain multiaddrs of both (its own listen port is picked now).
    let c = await ChildMember.start(options('c', [aAddr, ...b.addresses()]));
    children.push(c);
    const all = ['a', 'b', 'c'];
    await until('a, b and c alive everywhere', () =>
      [a.alive(), b.alive(), c.alive()].every((v) => JSON.stringify(v) === JSON.stringify(all)) || undefined);
    expect(changesAtA.at(-1)?.map((m) => m.name)).toEqual(all);
    expect(a.members().find((m) => m.name === 'c')).toMatchObject({ id: 'c-id', http: identity('c').http, status: 'alive' });

    // c dies without a word: failed after about suspicionMs, not before suspicionMs - heartbeatMs.
    const cPort = Number(/\/tcp\/(\d+)$/.exec(c.addrs[0]!)![1]);
    const killedAt = Date.now();
    await c.kill('SIGKILL');
    await until('c failed at a and b', () =>
      (statusOf(a.members(), 'c') === 'failed' && statusOf(b.members(), 'c') === 'failed') || undefined,
      suspicionMs + failMarginMs);
    const failedAfterMs = Date.now() - killedAt;
    expect(failedAfterMs).toBeGreaterThanOrEqual(suspicionMs - heartbeatMs);
    expect(a.alive()).toEqual(['a', 'b']);

    // c comes back on the same port (a new process, a new peer id): alive again everywhere.
    c = await ChildMember.start(options('c', [aAddr, ...b.addresses()], `/ip4/127.0.0.1/tcp/${cPort}`));
    children.push(c);
    await until('c alive again, and c sees a and b', () =>
      [a.alive(), b.alive(), c.alive()].every((v) => JSON.stringify(v) === JSON.stringify(all)) || undefined);

    // b stops cleanly: left at a and c well before a failure could be suspected.
    const stoppedAt = Date.now();
    await b.stop();
    await until('b left at a and c', () =>
      (statusOf(a.members(), 'b') === 'left' && statusOf(c.members, 'b') === 'left') || undefined,
      suspicionMs - heartbeatMs);
    expect(Date.now() - stoppedAt).toBeLessThan(suspicionMs);
    expect(a.alive()).toEqual(['a', 'c']);

    // c stops cleanly on SIGTERM; a is alone, and still alive in its own view.
    await c.kill('SIGTERM');
    await until('c left at a', () => statusOf(a.members(), 'c') === 'left' || undefined, suspicionMs - heartbeatMs);
    expect(a.alive()).toEqual(['a']);
    expect(a.members().map((m) => [m.name, m.status])).toEqual([['a', 'alive'], ['b', 'left'], ['c', 'left']]);
  }, 40_000);

  test('a node whose wall clock is set back an hour just after a member dies sees it failed after about suspicionMs', async () => {
    const clock = new SteppedSystemClock();
    const s = new GossipMembership({ ...options('s', []), clock });
    inProcess.push(s);
    await s.start();
    const d = await ChildMember.start(options('d', s.addresses()));
    children.push(d);
    await until('d alive at s', () => statusOf(s.members(), 'd') === 'alive' || undefined);
    await d.kill('SIGKILL');
    clock.step(-3_600_000);
    await until('d failed at s', () => statusOf(s.members(), 'd') === 'failed' || undefined, suspicionMs + failMarginMs);
  }, 30_000);

  test('no seeds: addresses published through a hook and discovered from it (as NATS key-value would)', async () => {
    const registry = new Map<string, string[]>();
    const nodes = ['p', 'q', 'r'].map((name) => new GossipMembership({
      ...options(name, []),
      publish: async (addrs) => { registry.set(name, addrs); },
      discover: async () => [...registry.values()].flat(), // includes the own address: skipped
    }));
    inProcess.push(...nodes);
    for (const n of nodes) await n.start();
    await until('p, q and r alive everywhere', () =>
      nodes.every((n) => JSON.stringify(n.alive()) === JSON.stringify(['p', 'q', 'r'])) || undefined);
    expect([...registry.keys()].sort()).toEqual(['p', 'q', 'r']);
    expect(registry.get('p')).toEqual(nodes[0]!.addresses());
  }, 20_000);
});
