/**
 * Who has been heard from, and their status: the pure core of GossipMembership. It never reads a
 * clock; the caller passes `nowMs`, so tests drive it with plain numbers. GossipMembership passes the
 * interval clock's reading (intervalMs): how long a member has been silent is not moved by a wall-clock step.
 */
import { commandLevel } from '../src/domain/index.ts';
import { ownersAmong, type Member, type MemberStatus } from '../src/ports/index.ts';
import type { Heartbeat } from './heartbeat.ts';

export type MemberIdentity = Pick<Member, 'name' | 'id' | 'http' | 'grpc'>;

interface Entry {
  member: Member;
  inc: number;
  seq: number;
  addrs: string[];
}

export class MemberTable {
  private readonly others = new Map<string, Entry>();
  /** This node cannot use the log (Membership.setLogReachable). */
  selfLogUnreachable = false;

  constructor(private readonly self: MemberIdentity) {}

  /**
   * Applies a heartbeat; true when a member joined, changed status, is another node now (see
   * startedFirst) or says it lost or regained the use of the log. Stale heartbeats (not after the last
   * one applied for that member) and heartbeats carrying the own name are ignored.
   */
  heard(hb: Heartbeat, nowMs: number): boolean {
    if (hb.name === this.self.name) return false;
    const prev = this.others.get(hb.name);
    if (prev !== undefined && !isNewer(prev, hb)) return false;
    const status: MemberStatus = hb.leaving === true ? 'left' : 'alive';
    const member: Member = { name: hb.name, id: hb.id, http: hb.http, grpc: hb.grpc, status, lastHeardMs: nowMs, commandLevel: hb.cl ?? 1 };
    if (hb.logUnreachable === true) member.logUnreachable = true;
    this.others.set(hb.name, { member, inc: hb.inc, seq: hb.seq, addrs: hb.addrs ?? prev?.addrs ?? [] });
    return prev?.member.status !== status || prev.member.id !== hb.id || prev.member.logUnreachable !== member.logUnreachable;
  }

  /** Marks `failed` every alive member unheard for `suspicionMs` or longer; true when any changed. */
  sweep(nowMs: number, suspicionMs: number): boolean {
    let changed = false;
    for (const e of this.others.values()) {
      if (e.member.status === 'alive' && nowMs - e.member.lastHeardMs >= suspicionMs) {
        e.member.status = 'failed';
        changed = true;
      }
    }
    return changed;
  }

  /** Moves a failed member to left (`prune`: forgets a failed or left one); true when anything changed. */
  forceLeave(name: string, prune: boolean): boolean {
    const e = this.others.get(name);
    if (e === undefined || e.member.status === 'alive') return false;
    if (prune) return this.others.delete(name);
    if (e.member.status === 'left') return false;
    e.member.status = 'left';
    return true;
  }

  /** Every member heard of, own node first (always alive, heard now), then the others by name. */
  members(nowMs: number): Member[] {
    const others = [...this.others.values()]
      .map((e) => ({ ...e.member }))
      .sort((a, b) => compareNames(a.name, b.name));
    const self: Member = { ...this.self, status: 'alive', lastHeardMs: nowMs, commandLevel };
    if (this.selfLogUnreachable) self.logUnreachable = true;
    return [self, ...others];
  }

  alive(): string[] {
    const names = [this.self.name];
    for (const e of this.others.values()) if (e.member.status === 'alive') names.push(e.member.name);
    return names.sort(compareNames);
  }

  /** The members that may own timers (ownersAmong). */
  owners(): string[] {
    return ownersAmong(this.members(0));
  }

  /** Listen addresses announced by members that have not left: where to dial them back. */
  dialableAddrs(): string[] {
    const out: string[] = [];
    for (const e of this.others.values()) if (e.member.status !== 'left') out.push(...e.addrs);
    return out;
  }
}

/**
 * While a member is alive only a later (inc, seq) counts. Once it is failed or left its incarnation is
 * over, so any other incarnation counts too: a node restarted with a clock set back must still be
 * heard. The cost is that a copy of an older incarnation delayed past that point revives it until
 * the suspicion timeout, which gossip's duplicate cache makes unlikely.
 */
function isNewer(prev: Entry, hb: Heartbeat): boolean {
  if (hb.id !== prev.member.id && prev.member.status === 'alive') return startedFirst(hb, { inc: prev.inc, id: prev.member.id, name: prev.member.name });
  if (hb.inc === prev.inc) return hb.seq > prev.seq;
  return hb.inc > prev.inc || prev.member.status !== 'alive';
}

/**
 * Two live nodes under one name (a configuration copied with its node_name) or one node ID (a data dir
 * copied): the one that started first keeps it, at every node alike, and the other stops when it hears it
 * (identity-clash.ts). True when `a` started before `b`: by start time (a heartbeat's `inc`), then by node
 * ID, then by name. A node whose name was held by a node now failed or left takes it over as a restart would.
 */
export function startedFirst(a: StartedAs, b: StartedAs): boolean {
  if (a.inc !== b.inc) return a.inc < b.inc;
  return a.id !== b.id ? a.id < b.id : a.name < b.name;
}

/** What startedFirst compares. */
export interface StartedAs { inc: number; id: string; name: string }

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
