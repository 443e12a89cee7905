/** bench:memory's table: every figure with its target, met or MISSED, and the commit measured. */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { formatRow } from '../server.ts';
import type { Phase } from './http.ts';
import type { Options } from './options.ts';
import { settleMs, type DiskUse, type Memory, type Readings } from './readings.ts';
import { secs, type Recovery } from './restart.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
/** The targets: resident memory with the full load held, and spawn → serving after a restart. */
export const rssTargetBytes = 1e9;
export const restartTargetMs = 15_000;

const mb = (bytes: number) => (Number.isNaN(bytes) ? '-' : `${(bytes / 1e6).toFixed(1)} MB`);
export const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

const cols = ['figure', 'value', 'target', ''] as const;
const widths = [50, 32, 9, 6];

/** The commit measured, and whether src/ differed from it (figures from uncommitted server code are not comparable). */
export function revision(): { commit: string; srcChanged: boolean } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), srcChanged: git('status', '--porcelain', '--', 'src', 'machines') !== '' };
  } catch {
    return { commit: 'unknown', srcChanged: false };
  }
}

function memoryRows(label: string, r: Readings): string[][] {
  const heap = (m: Memory) => `${mb(m.heapUsedBytes)} / ${mb(m.heapTotalBytes)} / ${mb(m.externalBytes)}`;
  return [
    [`RSS ${label}, ${settleMs * 2 / 1000} s later (VmRSS)`, mb(r.settled.vmRssBytes), '', ''],
    [`  heap used / total / external`, heap(r.settled), '', ''],
    [`RSS ${label}, idle ${r.idleAfterS.toFixed(0)} s more (VmRSS)`, mb(r.idle.vmRssBytes), '≤ 1 GB', verdict(r.idle.vmRssBytes <= rssTargetBytes)],
    [`  heap used / total / external`, heap(r.idle), '', ''],
    [`  peak RSS since spawn (VmHWM)`, mb(r.idle.vmHwmBytes), '', ''],
  ];
}

function recoveryRows(r: Recovery, o: Options): string[][] {
  const v = r.verification;
  const what = r.how === 'SIGTERM' ? 'restart after SIGTERM' : 'restart after SIGKILL';
  const rows = [
    [r.how === 'SIGTERM' ? 'SIGTERM → exit (shutdown snapshot)' : 'SIGKILL → exit', secs(r.stopMs), '', r.stopFailure === undefined ? '' : 'UNCLEAN'],
    [`${what}: spawn → ready line`, secs(r.readyMs), '≤ 15 s', verdict(r.readyMs <= restartTargetMs)],
    [`${what}: spawn → first right GET`, `${secs(r.firstGetMs)}`, '≤ 15 s', verdict(r.firstGetMs <= restartTargetMs)],
    [`  spawn → 'state recovered' log line`, r.recovered === undefined ? '-' : secs(r.recovered.atMs), '', ''],
    [`  snapshot index / WAL entries replayed`, `${r.snapshotIndex} / ${r.replayedEntries ?? '-'}`, '', ''],
    [`  sampled keys right`, `${v.sampled - v.sampleWrong}/${v.sampled}`, '', verdict(v.sampleWrong === 0)],
    [`  keys listed under mem/`, `${v.keysListed}/${o.keys}`, '', verdict(v.keysListed === o.keys)],
    [`  sessions listed / created missing`, `${v.sessionsListed} / ${v.sessionsMissing}`, '', verdict(v.sessionsListed === o.sessions && v.sessionsMissing === 0)],
  ];
  if (v.tailListed !== undefined) {
    rows.push([`  WAL-only tail keys listed / sampled wrong`, `${v.tailListed}/${o.tail} / ${v.tailSampleWrong}`, '', verdict(v.tailListed === o.tail && v.tailSampleWrong === 0)]);
  }
  return [...rows, ...memoryRows(`after ${r.how} restart`, r.memory)];
}

// ---------------------------------------------------------------- main

export interface Results {
  options: Options;
  machine: { node: string; cpu: string; cpus: number; dataDirFs: string; commit: string; srcChanged: boolean };
  freshStartMs: number;
  load: { keys: Phase; sessions: Phase; tail: Phase | undefined; retried: number };
  afterLoad: Readings;
  diskAfterLoad: DiskUse;
  recoveries: Recovery[];
  targets: { rssBytesMax: number; restartMsMax: number; rssMet: boolean; restartMet: boolean };
  verified: boolean;
}

export function table(r: Results): string {
  const o = r.options;
  const rows: string[][] = [
    ['fresh start, empty data dir: spawn → ready line', secs(r.freshStartMs), '', ''],
    [`load ${o.keys} keys`, `${r.load.keys.seconds.toFixed(1)} s, ${r.load.keys.perS.toFixed(0)}/s`, '', ''],
    [`load ${o.sessions} sessions`, `${r.load.sessions.seconds.toFixed(1)} s, ${r.load.sessions.perS.toFixed(0)}/s`, '', ''],
    ...memoryRows('after load', r.afterLoad),
    ['data dir after load (apparent size)', mb(r.diskAfterLoad.bytes), '', ''],
    // The log and the snapshots; the node id and the bench's config file are a few bytes.
    ...Object.entries(r.diskAfterLoad.parts).filter(([name]) => name.endsWith('/')).map(([name, b]) => [`  ${name}`, mb(b), '', '']),
    ...r.recoveries.flatMap((x) => recoveryRows(x, o)),
  ];
  return [formatRow(cols, widths), ...rows.map((row) => formatRow(row, widths))].join('\n');
}
