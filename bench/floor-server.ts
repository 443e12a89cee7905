/**
 * The floor for the lock rows of `npm run bench:compare`: the least a durable lock server can do per pair
 * on this machine, in Roster's runtime and HTTP library, speaking the calls the bench's Roster driver makes.
 * It is a yardstick, not a registry: locks and sessions in two maps, nothing else. What it does per write is
 * what any durable lock server behind HTTP/1.1 must do, done the way Roster does it:
 *
 * * the request is read by uWebSockets.js (the same package and native build as Roster's front end);
 * * a write pauses its connection until it is answered (Roster's guard against pipelined requests);
 * * writes are group-committed: while one commit is on its way to the disk the next ones queue, then go
 *   out together as one frame (`[u32 length][u32 crc32][JSON entries]`) written in place into a file kept
 *   zero-filled ahead, and one fdatasync;
 * * a commit's entries are applied in order once it is durable, and each request is answered in one corked write.
 *
 * Calls: `PUT /v1/session/create` → `{"ID":…}`; `PUT /v1/session/destroy/<id>` (releases what it holds);
 * `PUT /v1/kv/<key>?acquire=<id>` → `true`/`false`, with `&wait=<n>ms` queued until the holder releases
 * (the release's commit hands the lock over, as Roster's queued acquire does) or the wait ends;
 * `PUT /v1/kv/<key>?release=<id>` → `true`/`false`; `DELETE /v1/kv/<key>` → `true`. Anything else: 404.
 *
 * Run as its own process: `node --import tsx bench/floor-server.ts <data dir>`; it prints
 * `floor listening http://127.0.0.1:<port>` and stops on SIGTERM or SIGINT. The log file is
 * `<data dir>/floor.log`, reused from its start when full: no state is ever read back from it.
 */
import { fdatasyncSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type * as Uws from 'uWebSockets.js';
import { loadUws, readBody } from '../src/http/uws.ts';
import { encodeFrame } from '../src/wal/record.ts';

/** Loaded as Roster loads it: the same package, build and head size limit. */
const uws = loadUws();

/** The log file's size, zero-filled and synced once at start, so no fdatasync journals a size change. */
const logBytes = 64 * 1024 * 1024;
/** The largest request body read; the bench's are a few bytes. */
const bodyBytesMax = 64 * 1024;

type Entry =
  | { t: 'session'; id: string }
  | { t: 'destroy'; id: string }
  | { t: 'acquire'; key: string; session: string; value: string }
  | { t: 'release'; key: string; session: string }
  | { t: 'delete'; key: string };

/** A request waiting for its answer: a write until its commit is applied, a queued acquire until handed the lock. */
interface Exchange {
  res: Uws.HttpResponse;
  done: boolean;
  paused: boolean;
  id: number;
}

interface Pending { entry: Entry; ex: Exchange; waitMs: number }

interface Waiter { ex: Exchange; session: string; timer: NodeJS.Timeout }

const holders = new Map<string, string>();
const sessions = new Map<string, Set<string>>();
const queues = new Map<string, Waiter[]>();

let queued: Pending[] = [];
let committing = false;
let log: FileHandle;
let position = 0;
let sessionSeq = 0;
let requestSeq = 0;

function answer(ex: Exchange, status: string, body: string): void {
  if (ex.done) return;
  ex.done = true;
  ex.res.cork(() => {
    if (ex.paused) ex.res.resume();
    ex.res.writeStatus(`${status}\r\ncontent-type: application/json\r\nx-request-id: ${ex.id}`).end(body);
  });
}

// ---------------------------------------------------------------- apply

function grant(key: string, session: string): void {
  holders.set(key, session);
  sessions.get(session)!.add(key);
}

/** Frees `key` and, if a queued acquire waits for it, hands it over within the same commit. */
function free(key: string): void {
  const holder = holders.get(key);
  if (holder === undefined) return;
  holders.delete(key);
  sessions.get(holder)?.delete(key);
  const waiters = queues.get(key);
  for (let w = waiters?.shift(); w !== undefined; w = waiters!.shift()) {
    clearTimeout(w.timer);
    if (w.ex.done) continue;
    // A waiter whose session is gone is refused, as its acquire would be now.
    if (!sessions.has(w.session)) {
      answer(w.ex, '400 Bad Request', '"unknown session"');
      continue;
    }
    grant(key, w.session);
    answer(w.ex, '200 OK', 'true');
    break;
  }
  if (waiters !== undefined && waiters.length === 0) queues.delete(key);
}

function queue(key: string, session: string, p: Pending): void {
  const waiters = queues.get(key) ?? [];
  queues.set(key, waiters);
  const w: Waiter = { ex: p.ex, session, timer: setTimeout(() => {
    waiters.splice(waiters.indexOf(w), 1);
    answer(p.ex, '200 OK', 'false');
  }, p.waitMs) };
  waiters.push(w);
}

function apply(p: Pending): void {
  const e = p.entry;
  switch (e.t) {
    case 'session':
      sessions.set(e.id, new Set());
      return answer(p.ex, '200 OK', JSON.stringify({ ID: e.id }));
    case 'destroy':
      for (const key of [...(sessions.get(e.id) ?? [])]) free(key);
      sessions.delete(e.id);
      return answer(p.ex, '200 OK', 'true');
    case 'acquire': {
      if (!sessions.has(e.session)) return answer(p.ex, '400 Bad Request', '"unknown session"');
      const holder = holders.get(e.key);
      if (holder === undefined || holder === e.session) {
        grant(e.key, e.session);
        return answer(p.ex, '200 OK', 'true');
      }
      if (p.waitMs > 0) return queue(e.key, e.session, p);
      return answer(p.ex, '200 OK', 'false');
    }
    case 'release': {
      const held = holders.get(e.key) === e.session;
      if (held) free(e.key);
      return answer(p.ex, '200 OK', held ? 'true' : 'false');
    }
    case 'delete':
      free(e.key);
      return answer(p.ex, '200 OK', 'true');
  }
}

// ---------------------------------------------------------------- group commit

/** Commits everything queued, one frame and one fdatasync per round, until nothing is left. */
async function commit(): Promise<void> {
  committing = true;
  while (queued.length > 0) {
    const batch = queued;
    queued = [];
    // Roster's WAL frame: [u32 length][u32 crc32][payload].
    const frame = encodeFrame(JSON.stringify(batch.map((p) => p.entry)));
    if (position + frame.length > logBytes) position = 0;
    writeSync(log.fd, frame, 0, frame.length, position);
    position += frame.length;
    await log.datasync();
    for (const p of batch) apply(p);
  }
  committing = false;
}

function propose(entry: Entry, ex: Exchange, waitMs = 0): void {
  // Reading stops while the write commits, as in Roster: a request pipelined behind it waits in the kernel.
  if (waitMs === 0) {
    ex.res.pause();
    ex.paused = true;
  }
  queued.push({ entry, ex, waitMs });
  if (!committing) void commit().catch((err: unknown) => fatal(err));
}

// ---------------------------------------------------------------- HTTP

function waitOf(query: URLSearchParams): number {
  const m = /^(\d+)ms$/.exec(query.get('wait') ?? '');
  return m === null ? 0 : Math.min(Number(m[1]), 600_000);
}

function route(method: string, url: string, query: URLSearchParams, body: Buffer, ex: Exchange): void {
  if (method === 'PUT' && url === '/v1/session/create') return propose({ t: 'session', id: `floor-${++sessionSeq}` }, ex);
  if (method === 'PUT' && url.startsWith('/v1/session/destroy/')) return propose({ t: 'destroy', id: decodeURIComponent(url.slice(20)) }, ex);
  if (url.startsWith('/v1/kv/') && url.length > 7) {
    const key = decodeURIComponent(url.slice(7));
    if (method === 'DELETE') return propose({ t: 'delete', key }, ex);
    const acquire = query.get('acquire');
    if (method === 'PUT' && acquire !== null) return propose({ t: 'acquire', key, session: acquire, value: body.toString('base64') }, ex, waitOf(query));
    const release = query.get('release');
    if (method === 'PUT' && release !== null) return propose({ t: 'release', key, session: release }, ex);
  }
  answer(ex, '404 Not Found', '"not a call of the floor server"');
}

function onRequest(res: Uws.HttpResponse, req: Uws.HttpRequest): void {
  const method = req.getMethod().toUpperCase();
  const url = req.getUrl();
  const query = new URLSearchParams(req.getQuery() ?? '');
  const ex: Exchange = { res, done: false, paused: false, id: ++requestSeq };
  res.onAborted(() => { ex.done = true; });
  readBody(res, bodyBytesMax, (body) => {
    // As in Roster, a write starts one turn later, after uWS has parsed whatever came in with it.
    setImmediate(() => { if (!ex.done) route(method, url, query, body, ex); });
  }, () => answer(ex, '413 Payload Too Large', '"body too large"'));
}

function fatal(err: unknown): never {
  process.stderr.write(`floor: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (dir === undefined) throw new Error('usage: floor-server.ts <data dir>');
  log = await open(join(dir, 'floor.log'), 'w+');
  await log.write(Buffer.alloc(logBytes), 0, logBytes, 0);
  fdatasyncSync(log.fd);
  const app = uws.App().any('/*', onRequest);
  app.listen('127.0.0.1', 0, (socket) => {
    if (socket === false) fatal(new Error('cannot listen on 127.0.0.1'));
    const port = uws.us_socket_local_port(socket as unknown as Uws.us_socket);
    process.stdout.write(`floor listening http://127.0.0.1:${port}\n`);
    const stop = () => {
      uws.us_listen_socket_close(socket);
      app.close();
      void log.close().finally(() => process.exit(0));
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

main().catch(fatal);
