/**
 * Reading a V8 CPU profile (`node --cpu-prof`) for bench:profile: the main thread's busy share over a
 * window and its busy time by component. Each sample goes to the nearest frame on its stack (itself
 * first, then its callers) that belongs to a known component, so a socket write or a native call made by
 * the NATS client counts for the NATS client, one made by the WAL for the WAL.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
export interface CpuProfile { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

const repoUrl = pathToFileURL(resolve(import.meta.dirname, '../..')).href + '/';
/** Where `npm run build` puts the compiled agent, relative to the repository. */
const builtPrefix = 'dist/server/';

/**
 * Where a frame's script lives: `own` is its path in this repository (outside node_modules), `lib` the
 * path under node_modules (package first); both empty for natives and Node's own modules.
 */
function placeOf(url: string): { own: string; lib: string } {
  const at = url.lastIndexOf('/node_modules/');
  if (at >= 0) return { own: '', lib: url.slice(at + '/node_modules/'.length) };
  if (!url.startsWith(repoUrl)) return { own: '', lib: '' };
  // The compiled agent (dist/server/<path>.js) counts as its source file (<path>.ts).
  const path = url.slice(repoUrl.length);
  return { own: path.startsWith(builtPrefix) ? `${path.slice(builtPrefix.length).replace(/\.js$/, '.ts')}` : path, lib: '' };
}

/** Components, first match wins; a frame matching none passes the sample on to its caller. */
const components: { name: string; test: (own: string, lib: string, fn: string) => boolean }[] = [
  { name: 'garbage collection', test: (_o, _l, fn) => fn === '(garbage collector)' },
  { name: 'HTTP front end (uWS calls, request, routing, rendering)', test: (o, l) => o.startsWith('src/http/') || l.startsWith('uWebSockets') || l.startsWith('uwebsockets') },
  { name: 'WAL (encoding, write, fdatasync)', test: (o) => o.startsWith('src/wal/') },
  { name: 'JetStream log (Roster side)', test: (o) => o.startsWith('cluster/jetstream') },
  { name: 'NATS client library (nats.js)', test: (_o, l) => l.startsWith('@nats-io/') },
  { name: 'gossip (libp2p)', test: (o, l) => l.includes('libp2p') || l.startsWith('@chainsafe/') || o.startsWith('cluster/gossip') || o.startsWith('cluster/heartbeat') },
  { name: 'apply (state, lock and session steps)', test: (o, l) => o.startsWith('src/state/') || o.startsWith('machines/') || l.startsWith('xstate/') },
  { name: 'runtime (proposals, owners, watches, change ring)', test: (o) => o.startsWith('src/runtime/') },
  { name: 'metrics', test: (o, l) => o.startsWith('src/metrics/') || l.startsWith('prom-client/') },
  { name: 'logging (pino)', test: (_o, l) => l.startsWith('pino') },
  { name: 'other Roster code', test: (o) => o !== '' },
];
const unattributed = 'Node and V8 internals (timers, microtasks, streams) with no Roster frame';
const notAttributed = 'V8 and native code, not attributed';

export interface MainThread {
  file: string;
  windowMs: number;
  busyPct: number;
  /** Share of busy time. */
  components: { name: string; pct: number }[];
  hottest: { fn: string; pct: number }[];
}

/** `file`'s main-thread figures over [fromUs, untilUs] on the profile's clock (µs, process.hrtime's). */
export function readProfile(file: string, fromUs: number, untilUs: number): MainThread {
  return summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, file, fromUs, untilUs);
}

export function summarizeProfile(p: CpuProfile, file: string, fromUs: number, untilUs: number): MainThread {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const componentOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = componentOf.get(id);
    if (known !== undefined) return known;
    const { url, functionName } = byId.get(id)!.callFrame;
    const { own, lib } = placeOf(url);
    const hit = components.find((c) => c.test(own, lib, functionName));
    const up = parent.get(id);
    const name = hit?.name ?? (functionName === '(program)' ? notAttributed : up === undefined ? unattributed : classify(up));
    componentOf.set(id, name);
    return name;
  };
  const selfUs = new Map<number, number>();
  let total = 0;
  let idle = 0;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t < fromUs || t > untilUs) continue;
    // A sample stands for the time until the next one.
    const span = p.timeDeltas[i + 1] ?? 0;
    const id = p.samples[i]!;
    total += span;
    if (byId.get(id)!.callFrame.functionName === '(idle)') {
      idle += span;
      continue;
    }
    selfUs.set(id, (selfUs.get(id) ?? 0) + span);
  }
  const busy = total - idle;
  const byComponent = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const c = classify(id);
    byComponent.set(c, (byComponent.get(c) ?? 0) + us);
    const f = byId.get(id)!.callFrame;
    const { own, lib } = placeOf(f.url);
    const where = f.url === '' ? '(native)' : own || lib || f.url;
    const key = `${f.functionName || '(anonymous)'}  ${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const share = (us: number) => (busy > 0 ? (100 * us) / busy : 0);
  return {
    file, windowMs: total / 1000, busyPct: total > 0 ? (100 * busy) / total : 0,
    components: [...byComponent].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, pct: share(us) })),
    hottest: [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([fn, us]) => ({ fn, pct: share(us) })),
  };
}

