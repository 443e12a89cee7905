/**
 * Backup and restore of the whole state, as Consul's `/v1/snapshot`:
 *
 * * `GET` answers a snapshot file (src/state/snapshot-file.ts) of the state at one applied index, sent as
 *   X-Consul-Index. It is taken in one synchronous step between two applies, so no write interleaves; by
 *   default after a barrier entry, so it holds every write acknowledged before the request (on any node of
 *   a cluster); `?stale` answers from this node's state as it is.
 * * `PUT` takes such a file as its body. The layout version, the checksum and the payload are checked, and
 *   the payload is loaded into a scratch state, before anything is proposed: a damaged or truncated file is
 *   a 400 and changes nothing. Then one `state.restore` entry replaces the whole state, so every node
 *   applies it at the same index and a replay of the log rebuilds it (src/state/apply/restore.ts). A large
 *   snapshot is stored as an attachment of the log first (a file beside the WAL, an object of the
 *   cluster's object store) and the entry names it. Answers `{"Index":n}`, the restore entry's index.
 *
 * Both need the operator rule (read to save, write to restore: src/auth/acl.ts). A snapshot holds every
 * record, so saving one also needs read on everything it holds (see snapshotContents).
 */
import { createHash } from 'node:crypto';
import type { StateRestore } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import {
  encodeSnapshotFile, fromSnapshotData, readSnapshotFile, SnapshotFileError, toSnapshotData, type RegistryState, type SnapshotData,
} from '../../state/index.ts';
import { snapshotRecordsProblem } from '../../state/snapshot-records.ts';
import { allowedPrefix, type Resource } from '../../auth/index.ts';
import { isLogUnavailable } from '../../ports/log-errors.ts';
import type { ApiContext } from '../api.ts';
import { denied } from '../auth-gate.ts';
import { shortageErrors } from '../dispatch.ts';
import { checkDatacenter } from '../query.ts';
import { json, type Reply } from '../reply.ts';
import { flag, type Request } from '../request.ts';
import type { Route } from '../router.ts';

/** Largest snapshot file PUT accepts (compressed). */
export const snapshotBodyBytesMax = 256 * 1024 * 1024;
/**
 * A snapshot of up to this many bytes of JSON travels inside the restore entry; a larger one as an
 * attachment of the log (a file beside the WAL, an object of the cluster's object store).
 */
const inlineBytesMax = 256 * 1024;

/**
 * What a snapshot holds. Saving one reads all of it, so it needs read on each as a prefix, with no rule
 * below that denies (a key rule `secret/` deny refuses it): operator read alone would hand a monitoring
 * token every key's value. Consul asks for a management token.
 */
const snapshotContents: readonly Resource[] = ['key', 'session', 'node', 'service', 'check'];

function requireReadAll(req: Request): void {
  if (req.identity === undefined) return;
  for (const resource of snapshotContents) {
    const need = { resource, name: '', access: 'read' as const };
    if (!allowedPrefix(req.identity, need)) throw denied(need);
  }
}

async function save(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  requireReadAll(req);
  if (!flag(req, 'stale')) await api.runtime.barrier().catch((err: unknown) => { throw staleAdvised(err); });
  const data = detachedSnapshot(api.runtime.state);
  const { file, meta } = await encodeSnapshotFile(data, api.nodeName, Date.now());
  return {
    t: 'file', body: file, contentType: 'application/gzip', cacheControl: 'no-store',
    headers: [['X-Consul-Index', String(meta.index)], ['Content-Disposition', `attachment; filename="roster-${meta.index}.snap"`]],
  };
}

/**
 * A barrier the log refuses for now (a full disk, a data dir being written afresh): the 503 a write gets
 * then, saying that `?stale` saves the snapshot without it. Any other failure as it is.
 */
function staleAdvised(err: unknown): unknown {
  if (!isLogUnavailable(err)) return err;
  const refusal = new RegistryError(shortageErrors[err.shortage]);
  return new RegistryError('snapshotBarrierRefused', { refusal });
}

/**
 * The state's snapshot data, with copies of the records apply changes in place (a session's renewal), so
 * the file written over the next turns of the event loop is the state at this index, whatever applies meanwhile.
 */
function detachedSnapshot(state: RegistryState): SnapshotData {
  const d = toSnapshotData(state);
  return {
    ...d, sessions: d.sessions.map((x) => ({ ...x })), checks: d.checks.map((x) => ({ ...x })),
    services: d.services.map((x) => ({ ...x })), nodes: d.nodes.map((x) => ({ ...x })),
  };
}

async function restore(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const { data, bytes } = checkedFile(req.body, api.enableScriptChecks);
  let result;
  try {
    result = await api.runtime.propose(bytes <= inlineBytesMax ? { t: 'state.restore', data } : await restoreCommandOf(api, req.body, data));
  } catch (err) {
    // The entry is refused before anything is appended: nothing changed.
    if (err instanceof RangeError && /limit/.test(err.message)) throw new RegistryError('snapshotTooLarge', { why: err.message });
    throw err;
  }
  const index = result.ok ? result.index ?? api.runtime.state.index : api.runtime.state.index;
  return json({ Index: index }, { index });
}

/**
 * The restore entry of a large file: the name and SHA-256 of the file stored as an attachment of the log
 * (the WAL's data dir, the cluster's object store), or the data itself when the log keeps none.
 */
async function restoreCommandOf(api: ApiContext, file: Buffer, data: SnapshotData): Promise<StateRestore> {
  const sha256 = createHash('sha256').update(file).digest('hex');
  const name = await api.runtime.storeAttachment(file, sha256);
  return name === undefined ? { t: 'state.restore', data } : { t: 'state.restore', attachment: { name, sha256 } };
}

/**
 * The file's state data once layout, checksum and payload hold, every record is one the agent could have
 * written, the file brings no command to run unless remote scripts are allowed, and it loads into a state;
 * else a 400.
 */
function checkedFile(body: Buffer, scriptsAllowed: boolean): { data: SnapshotData; bytes: number } {
  if (body.length === 0) throw new RegistryError('snapshotInvalid', { why: 'the body is empty: send a snapshot file' });
  let checked: { data: SnapshotData; bytes: number };
  try {
    checked = readSnapshotFile(body);
  } catch (err) {
    const why = err instanceof SnapshotFileError ? err.message : `bad payload: ${(err as Error).message}`;
    throw new RegistryError('snapshotInvalid', { why });
  }
  const problem = snapshotRecordsProblem(checked.data) ?? (scriptsAllowed ? undefined : scriptCheckIn(checked.data));
  if (problem !== undefined) throw new RegistryError('snapshotInvalid', { why: problem });
  try {
    // A trial load: an entry that cannot be applied would stop every node that applies it.
    fromSnapshotData(checked.data);
  } catch (err) {
    throw new RegistryError('snapshotInvalid', { why: `bad payload: ${(err as Error).message}` });
  }
  return checked;
}

/**
 * A script or container check the agents would run. A restore is a remote call: like a registration
 * through the HTTP API, it may bring one only where enable_script_checks allows it.
 */
function scriptCheckIn(d: SnapshotData): string | undefined {
  const x = d.checks.find((c) => c.source === 'agent' && (c.type === 'script' || c.type === 'docker'));
  if (x === undefined) return undefined;
  return `check ${JSON.stringify(x.checkId)} of node ${JSON.stringify(x.node)} is a ${x.type === 'script' ? 'script' : 'container'} check, `
    + 'and this agent takes script and container checks from remote calls only with enable_script_checks: '
    + 'restore through an agent that has it, or leave such checks out of the file';
}

export const snapshotRoutes: Route<ApiContext>[] = [
  {
    path: '/v1/snapshot', prefix: false, methods: { GET: save, PUT: restore }, query: ['dc', 'stale'], bodyBytesMax: snapshotBodyBytesMax,
    produces: { GET: ['application/gzip'] },
  },
];
