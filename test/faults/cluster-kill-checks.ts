/**
 * The checks of the kill scenarios that are not a model's: nodes agreeing after healing, indexes that
 * never go backwards, no acknowledged register write lost, and the linearizability report's summary.
 */
import { formatOp, type Report } from '../checker/linearizability.ts';
import { http, indexOf, type FaultCluster } from './cluster-harness.ts';

/** A register write of the load: its value, when it was made and answered, and whether it was acknowledged. */
export interface RegisterWrite { key: string; value: string; callMs: number; returnMs?: number; acked: boolean }

/**
 * Every node shows the same entries under `prefix` (key, value, session, LockIndex, ModifyIndex) and gives a
 * fresh write the same ModifyIndex: equal state at equal index. Returns the disagreements.
 */
export async function divergence(cluster: FaultCluster, prefix: string, timeoutMs: number): Promise<string[]> {
  const out: string[] = [];
  const probe = `${prefix}probe`;
  const w = await http(cluster.nodes[0]!.url, 'PUT', `/v1/kv/${probe}`, { body: String(Date.now()), timeoutMs });
  if (w.status !== 200) return [`probe write: ${w.status} ${w.error ?? w.text}`];
  const views = await Promise.all(cluster.nodes.map(async (n) => {
    const a = await http(n.url, 'GET', `/v1/kv/${prefix}?recurse&consistent`, { timeoutMs });
    if (a.status !== 200) return { node: n.name, entries: new Map<string, string>(), error: `${a.status} ${a.error ?? a.text}` };
    const entries = a.json<{ Key: string; Value: string | null; Session?: string; LockIndex: number; ModifyIndex: number }[]>();
    return { node: n.name, entries: new Map(entries.map((e) => [e.Key, `${e.Value}|${e.Session ?? ''}|${e.LockIndex}|${e.ModifyIndex}`])), error: undefined };
  }));
  const [first, ...rest] = views;
  for (const v of views) if (v.error !== undefined) out.push(`${v.node}: ${v.error}`);
  const probeIndex = indexOf(w);
  for (const v of views) {
    const mine = v.entries.get(probe)?.split('|')[3];
    if (mine !== String(probeIndex)) out.push(`${v.node}: the probe written at index ${probeIndex} has ModifyIndex ${mine}`);
  }
  for (const v of rest) {
    for (const key of new Set([...first!.entries.keys(), ...v.entries.keys()])) {
      if (key === probe) continue;
      const a = first!.entries.get(key);
      const b = v.entries.get(key);
      if (a !== b) out.push(`${key}: ${first!.node} ${a ?? 'absent'} vs ${v.node} ${b ?? 'absent'}`);
    }
  }
  return out;
}

/** An answer that carried an index (X-Consul-Index), with when its request was made and answered. */
export interface Indexed { what: string; key: string; callMs: number; returnMs: number; index: number; write: boolean }
/**
 * Indexes never go backwards: a write that was invoked after another write returned has a larger index
 * (the log position of its entry), and a ?consistent read of a key shows at least the index of every
 * write to that key and every read of it that returned before the read was invoked.
 */
export function indexRegressions(list: Indexed[]): string[] {
  const out: string[] = [];
  const byCall = [...list].sort((a, b) => a.callMs - b.callMs);
  const byReturn = [...list].sort((a, b) => a.returnMs - b.returnMs);
  let k = 0;
  let maxWrite: Indexed | undefined;
  const maxPerKey = new Map<string, Indexed>();
  for (const op of byCall) {
    while (k < byReturn.length && byReturn[k]!.returnMs < op.callMs) {
      const done = byReturn[k++]!;
      if (done.write && (maxWrite === undefined || done.index > maxWrite.index)) maxWrite = done;
      const m = maxPerKey.get(done.key);
      if (m === undefined || done.index > m.index) maxPerKey.set(done.key, done);
    }
    if (op.write && maxWrite !== undefined && op.index <= maxWrite.index) {
      out.push(`${op.what} index ${op.index} after ${maxWrite.what} returned ${maxWrite.index}`);
    }
    const m = maxPerKey.get(op.key);
    if (!op.write && m !== undefined && op.index < m.index) out.push(`${op.what} on ${op.key} index ${op.index} after ${m.what} returned ${m.index}`);
  }
  return out;
}

export function summarize(name: string, r: Report): string {
  const bad = r.keys.filter((k) => k.valid !== true).map((k) => k.valid === false
    ? `${k.key}: ${k.reason}\n    ${k.witness.map(formatOp).join('\n    ')}`
    : `${k.key}: ${k.reason}`);
  return `${name}: valid=${r.valid} ops=${r.ops} unknown=${r.unknownOps} fail=${r.failOps} ${Math.round(r.elapsedMs)} ms${bad.length > 0 ? `\n  ${bad.join('\n  ')}` : ''}`;
}

/**
 * Final values: each register key ends with a value some write put there, and no acknowledged write was
 * overwritten only by nothing: the final value is the value of an acknowledged write that no other
 * acknowledged write followed in real time, or of a write whose answer was unknown.
 */
export function lostWrites(keys: readonly string[], registerWrites: readonly RegisterWrite[], finals: Map<string, string | null>): string[] {
  const out: string[] = [];
  for (const key of keys) {
    const writes = registerWrites.filter((w) => w.key === key);
    const acked = writes.filter((w) => w.acked);
    if (acked.length === 0) continue;
    const final = finals.get(key) ?? null;
    const w = writes.find((x) => x.value === final);
    if (w === undefined) { out.push(`${key}: final value ${JSON.stringify(final)} was never written (acknowledged: ${acked.length})`); continue; }
    if (!w.acked) continue;
    const later = acked.find((x) => x.callMs > w.returnMs!);
    if (later !== undefined) out.push(`${key}: final value ${final} (acknowledged) but ${later.value}, written after it, was acknowledged too`);
  }
  return out;
}
