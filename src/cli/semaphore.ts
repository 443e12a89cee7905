/**
 * `roster lock -n N`: a slot of a semaphore in Consul's layout (its api/semaphore.go and `consul lock -n`),
 * so Roster's and Consul's clients share one: every contender holds the key `<prefix>/<session>` with its
 * session (Behavior delete, so the key goes with the session), and `<prefix>/.lock` holds
 * `{"Limit":N,"Holders":{"<session>":true}}`, changed only by check-and-set. Both carry Consul's semaphore
 * flags value. A holder whose session holds no key under the prefix any more is dead and pruned by whoever
 * writes next. The slot is taken by adding our session to Holders when fewer than Limit remain; it is lost
 * when our session is no longer among the (pruned) holders.
 */
import { failureOf, keyPath, requestTimeoutMs, type Answer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError } from './errors.ts';
import type { KvEntry } from './kv.ts';
import { entryOf, semaphoreFlagValue, type Claim, type Held } from './lock-claim.ts';

/** Check-and-set attempts to take ourselves out of Holders before giving up (the session's end frees the slot anyway). */
const releaseAttemptsMax = 20;

interface SemaphoreState {
  Limit: number;
  Holders: Record<string, boolean>;
}

const isRefusal = (a: Answer) => (a.status === 200 && a.text.trim() === 'false') || a.status === 409;
const isDone = (a: Answer) => a.status === 200 && a.text.trim() === 'true';

export class Semaphore implements Claim {
  readonly behavior = 'delete';
  readonly describe: string;
  private session = '';
  /** The prefix's index to wait from while every slot is taken (0: read at once). */
  private listIndex = 0;

  constructor(private readonly ctx: CliContext, readonly what: string, private readonly limit: number) {
    this.describe = `a slot of semaphore "${what}" (limit ${limit})`;
  }

  private get lockKey(): string { return `${this.what}/.lock`; }
  private get contenderKey(): string { return `${this.what}/${this.session}`; }

  async enter(session: string, signal: AbortSignal): Promise<void> {
    this.session = session;
    const a = await this.ctx.client.put(`/v1/kv/${keyPath(this.contenderKey)}`, { query: { acquire: session, flags: semaphoreFlagValue }, signal });
    if (!isDone(a)) throw new CliError(`could not write the contender key ${this.contenderKey}: ${a.status === 200 ? 'refused' : failureOf(a).message}`);
  }

  async tryAcquire(waitMs: number, signal: AbortSignal): Promise<number | undefined> {
    const { pairs, index } = await this.list(this.listIndex, waitMs, signal);
    if (!pairs.some((p) => p.Key === this.contenderKey)) throw new CliError(`the contender key ${this.contenderKey} is gone: the session ended`);
    const { entry, state } = this.decode(pairs);
    if (Object.keys(state.Holders).length >= state.Limit) {
      this.listIndex = index;
      return undefined;
    }
    state.Holders[this.session] = true;
    const a = await this.ctx.client.put(`/v1/kv/${keyPath(this.lockKey)}`, {
      body: JSON.stringify(state), query: { cas: entry?.ModifyIndex ?? 0, flags: semaphoreFlagValue }, signal,
    });
    if (isDone(a)) return a.index ?? index;
    if (!isRefusal(a)) throw new CliError(`could not update ${this.lockKey}: ${failureOf(a).message}`);
    this.listIndex = 0; // another contender wrote first: read again at once
    return undefined;
  }

  async check(index: number, waitMs: number, signal: AbortSignal): Promise<Held> {
    const { pairs, index: next } = await this.list(index, waitMs, signal);
    if (!pairs.some((p) => p.Key === this.lockKey)) return { held: false, reason: `the semaphore's key ${this.lockKey} was deleted` };
    let state: SemaphoreState;
    try {
      ({ state } = this.decode(pairs));
    } catch (err) {
      return { held: false, reason: (err as Error).message };
    }
    if (state.Holders[this.session] !== true) return { held: false, reason: `session ${this.session} is no longer a holder of semaphore ${this.what}` };
    return { held: true, index: next };
  }

  async release(): Promise<void> {
    for (let attempt = 0; attempt < releaseAttemptsMax; attempt++) {
      const a = await this.ctx.client.get(`/v1/kv/${keyPath(this.lockKey)}`);
      if (a.status === 404) break;
      const entry = entryOf(a)!;
      const state = parseState(entry, this.limit);
      if (state === undefined || state.Holders[this.session] === undefined) break;
      delete state.Holders[this.session];
      const w = await this.ctx.client.put(`/v1/kv/${keyPath(this.lockKey)}`, { body: JSON.stringify(state), query: { cas: entry.ModifyIndex, flags: semaphoreFlagValue } });
      if (isDone(w)) break;
      if (!isRefusal(w)) throw new CliError(`could not update ${this.lockKey}: ${failureOf(w).message}`);
    }
    const d = await this.ctx.client.del(`/v1/kv/${keyPath(this.contenderKey)}`);
    if (d.status !== 200) throw new CliError(`could not delete the contender key ${this.contenderKey}: ${failureOf(d).message}`);
    await this.cleanUp();
  }

  /** As Consul's Destroy: the coordination key goes when no live holder remains (by CAS, so a newcomer's write wins). */
  private async cleanUp(): Promise<void> {
    const { pairs } = await this.list(0, 0);
    let decoded: { entry?: KvEntry; state: SemaphoreState };
    try { decoded = this.decode(pairs); } catch { return; }
    if (decoded.entry === undefined || Object.keys(decoded.state.Holders).length > 0) return;
    await this.ctx.client.del(`/v1/kv/${keyPath(this.lockKey)}`, { query: { cas: decoded.entry.ModifyIndex } });
  }

  /** The keys under the prefix, waiting from `index` for at most `waitMs` (index 0 or no wait: at once). */
  private async list(index: number, waitMs: number, signal?: AbortSignal): Promise<{ pairs: KvEntry[]; index: number }> {
    // No wait left (the -try deadline): an answer at once, never the agent's default wait.
    const blocking = index > 0 && waitMs > 0 ? { index, wait: `${Math.max(1, Math.round(waitMs))}ms` } : {};
    const a = await this.ctx.client.get(`/v1/kv/${keyPath(`${this.what}/`)}`, {
      query: { recurse: true, ...blocking }, timeoutMs: waitMs + requestTimeoutMs, ...(signal ? { signal } : {}),
    });
    if (a.status === 404) return { pairs: [], index: a.index ?? 0 };
    if (a.status !== 200) throw failureOf(a);
    return { pairs: a.json<KvEntry[]>(), index: a.index ?? 0 };
  }

  /** The coordination key and its state with the dead holders pruned; a key of another kind or limit is thrown. */
  private decode(pairs: KvEntry[]): { entry?: KvEntry; state: SemaphoreState } {
    const entry = pairs.find((p) => p.Key === this.lockKey);
    if (entry !== undefined && String(entry.Flags) !== semaphoreFlagValue) {
      throw new CliError(`${this.lockKey} is not a semaphore's key (flags ${String(entry.Flags)}): a lock (-n 1) uses this prefix`);
    }
    const state = entry === undefined ? { Limit: this.limit, Holders: {} } : parseState(entry, this.limit);
    if (state === undefined) throw new CliError(`${this.lockKey} does not hold a semaphore's {"Limit","Holders"}`);
    if (state.Limit !== this.limit) throw new CliError(`semaphore limit conflict (lock: ${state.Limit}, local: ${this.limit})`);
    const alive = new Set(pairs.map((p) => p.Session).filter((s) => s !== undefined));
    for (const holder of Object.keys(state.Holders)) if (!alive.has(holder)) delete state.Holders[holder];
    return { ...(entry ? { entry } : {}), state };
  }
}

/** `{"Limit":N,"Holders":{...}}` from the key's value (an empty value: our limit, no holders yet); undefined when it is not that. */
function parseState(entry: KvEntry, limit: number): SemaphoreState | undefined {
  if (entry.Value === null || entry.Value === '') return { Limit: limit, Holders: {} };
  try {
    const v = JSON.parse(Buffer.from(entry.Value, 'base64').toString('utf8')) as Partial<SemaphoreState>;
    if (!Number.isSafeInteger(v.Limit)) return undefined;
    const holders = v.Holders ?? {};
    if (typeof holders !== 'object' || Array.isArray(holders)) return undefined;
    return { Limit: v.Limit!, Holders: { ...holders } };
  } catch {
    return undefined;
  }
}
