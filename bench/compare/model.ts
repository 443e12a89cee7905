/**
 * What bench:compare's parts share: the systems it knows, which peer each Roster setup is compared with,
 * its options and the record of a run.
 */
import type { RowResult } from '../measure.ts';
import type { WrkResult } from '../peers/reads.ts';

export const warmupMs = 500;
export const keyPrefix = 'bench';

export const lockSystems = ['roster', 'etcd', 'nats-kv', 'roster-cluster', 'etcd-cluster', 'nats-kv-r3'] as const;
export type LockSystem = typeof lockSystems[number];
export const allSystems = [...lockSystems, 'reads'] as const;
export type System = typeof allSystems[number];

/** Which peer each Roster setup is compared with. */
export const comparisons: { roster: LockSystem; peer: LockSystem }[] = [
  { roster: 'roster', peer: 'etcd' },
  { roster: 'roster', peer: 'nats-kv' },
  { roster: 'roster-cluster', peer: 'etcd-cluster' },
  { roster: 'roster-cluster', peer: 'nats-kv-r3' },
];

export interface Options {
  durationS: number;
  clients: number[];
  systems: System[];
  jsonPath: string;
  dataParent: string;
}

export interface SystemRun {
  system: LockSystem;
  /** What was started, in a line: log, replicas, data dir. */
  description: string;
  rows: (RowResult & { system: LockSystem })[];
  error?: string;
}

export interface ReadsRun { hello?: WrkResult; roster?: WrkResult; ratio?: number; error?: string }
