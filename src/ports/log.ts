import type { Command } from '../domain/commands.ts';
import type { LogObserver } from './observer.ts';

export { isLogUnavailable, logUnavailableCode } from './log-errors.ts';

/** A proposal: the command and the proposer's id for it, so the proposer can find its entry again. */
export interface Proposal {
  /** Proposal id, unique per proposer (node name + counter); carried in the entry. */
  pid: string;
  cmd: Command;
}

/** A committed entry. `index` is the registry index; entries are delivered with consecutive indexes. */
export interface LogEntry {
  index: number;
  /** Entry time in ms since the epoch, stamped once before commit; never decreases along the log. */
  atMs: number;
  pid: string;
  cmd: Command;
}

/** A snapshot of applied state: `data` is opaque to the log (the state module owns its format). */
export interface Snapshot {
  index: number;
  data: unknown;
}

export type EntriesListener = (entries: readonly LogEntry[]) => void;

/**
 * The replicated log. The embedded WAL (src/wal) and the in-memory twin implement it; the JetStream
 * adapter (cluster/) will too. All pass test/log/compliance.ts.
 */
export interface ReplicatedLog {
  /**
   * Opens the log and returns the newest snapshot (or undefined). Entries after the snapshot are
   * delivered to the listener given to `subscribe`, starting with the first one after the snapshot.
   */
  open(): Promise<Snapshot | undefined>;
  /**
   * Registers the single consumer of committed entries. It first receives every stored entry after
   * `afterIndex` (replay), then each newly committed batch, always in index order, each entry once.
   */
  subscribe(afterIndex: number, listener: EntriesListener): void;
  /**
   * Appends proposals. Resolves once they are committed (durable for the WAL) and, importantly,
   * after the listener was called with them, at the place the log holds them. Proposals arriving while
   * a commit is in flight are grouped into the next commit (group commit). A rejection leaves the outcome
   * unknown, even when the listener already received them: the runtime answers a proposer only after
   * both.
   */
  append(proposals: readonly Proposal[]): Promise<void>;
  /** Stores a snapshot of state at `snapshot.index` and drops log entries it makes unneeded. */
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  /** Index of the last committed entry (0 when empty). */
  lastIndex(): number;
  /**
   * Bytes of entries this log holds past the snapshot it opened from (what a start reads back) and has written
   * since it opened (a count that may start again from 0 when the log's files are made afresh), and how many
   * bytes past the last snapshot call for the next: what a snapshot lets the log drop grows with the bytes, not
   * only with the entries, and a log that restarts often must not grow by what each process wrote alone.
   * Absent: not counted.
   */
  written?(): { bytes: number; snapshotDueBytes: number };
  /** Flushes and releases resources; pending appends are committed or rejected, never lost silently. */
  close(): Promise<void>;
  /**
   * Which log this is, once open: the same text on every node that shares it and a different one for
   * any other log (a replicated log's stream and its creation time). Nodes gossip it so that members of
   * another cluster are not taken for their own. A single-node log leaves it out.
   */
  identity?(): string | undefined;
  /**
   * What this node knows of the log's leadership (replicated logs). A single-node log leaves it out:
   * the node is its own leader.
   */
  leadership?(): Leadership;
  /**
   * Tells `listener` each time the log stops or starts again being able to store appends: the WAL while
   * its disk is full (appends are then refused with an error the log marks as unavailable, and nothing
   * of them is applied) or after it failed for good. A log that is always writable leaves it out.
   */
  onWritable?(listener: (writable: boolean) => void): void;
  /**
   * Tells `listener` each time this node loses or regains the use of a log it shares with other nodes: a
   * replicated log whose servers have not answered this node for a while (no commit acknowledged, nothing
   * delivered, no word from the leader), and answer it again. The agent tells its membership, so other
   * members take over the timers this node owns (Membership.setLogReachable). A log of one node leaves it out.
   */
  onReachable?(listener: (reachable: boolean) => void): void;
  /**
   * What this node knows of the log's state: its indexes, compaction point and, for a replicated log,
   * the copies and the other nodes' progress. Cheap: answered from what the log already holds or asked
   * in the background, never a request per call. A twin may leave it out.
   */
  status?(): LogStatus;
  /**
   * Stores bytes too large for one entry next to the log (the WAL: a file in its data dir) and resolves
   * with the name an entry carries instead (a restore of a large snapshot). A log that cannot leaves it out.
   */
  storeAttachment?(bytes: Buffer, sha256: string): Promise<string>;
  /** The bytes stored under `name`, read when an entry naming them applies (live or in a replay). */
  loadAttachment?(name: string): Buffer;
  /**
   * Gives the log a way to take a snapshot of everything applied (the runtime's state as of the last
   * entry it applied). The WAL asks for one when its data dir was removed while it ran: it writes it to
   * the dir made afresh and goes on from there. The JetStream log asks for one when it made its snapshot
   * bucket again (deleted on the nats-servers). A log that keeps nothing of its own leaves it out.
   */
  snapshotSource?(source: () => Snapshot): void;
  /** Reports each of this node's group commits to `observer` from now on (metrics). Optional: a twin may leave it out. */
  observe?(observer: LogObserver): void;
}

export interface Leadership {
  /** The leader's name or address, undefined while there is none (an election is under way). */
  leader: string | undefined;
  /** The members that hold the log. */
  peers: string[];
  /** Milliseconds since this node last heard from the leader (0 on the leader). */
  lastContactMs: number;
}

/** The log as `ReplicatedLog.status` reports it (`/v1/operator/log`, `/v1/agent/self`). */
export interface LogStatus {
  kind: 'wal' | 'jetstream' | 'memory';
  /** Index of the last entry this node holds (and has delivered to its consumer). */
  lastIndex: number;
  /**
   * The compaction point: the first index still stored (entries before it live only in a snapshot);
   * `lastIndex + 1` when no entry is stored; undefined when the log cannot tell (a stream whose first
   * messages were removed, and no mark of where).
   */
  firstIndex: number | undefined;
  /** Index of the newest snapshot this node saved or opened from (0: none). */
  snapshotIndex: number;
  /** A JetStream log's stream, as last asked in the background. */
  stream?: StreamStatus;
  /** A replicated log: the progress each Roster node last reported (this node included). */
  nodes?: NodeProgress[];
}

export interface StreamStatus {
  name: string;
  /** The nats server leading the stream, undefined during an election. */
  leader: string | undefined;
  /** Every server holding a copy, the leader included. */
  replicas: StreamReplica[];
  /** The stream's first and last sequence numbers and message count. */
  firstSeq: number;
  lastSeq: number;
  messages: number;
  /** The nats server this node is connected to ('' while disconnected). */
  server: string;
  /** Milliseconds since the stream was last asked successfully. */
  askedAgoMs: number;
}

export interface StreamReplica {
  /** The nats server's name. */
  name: string;
  leader: boolean;
  /** Whether the copy is up to date with the leader (the leader: true). */
  current: boolean;
  /** Milliseconds since the leader last heard from it (the leader: 0). */
  activeMs: number;
  /** Messages it is behind the leader. */
  lagMessages: number;
}

/** One Roster node's progress, as it last reported it. */
export interface NodeProgress {
  name: string;
  /** The nats server it is connected to ('' while disconnected). */
  server: string;
  /** The last index it applied. */
  appliedIndex: number;
  /** Milliseconds since its report was received (this node: 0). */
  ageMs: number;
  /**
   * The digest of the newest window of the stream it read (cluster only): nodes that read the same
   * messages report the same digest for a window.
   */
  window?: { end: number; sha: string };
}
