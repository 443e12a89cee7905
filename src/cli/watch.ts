/**
 * `roster watch <topic> <key>`: subscribes on the agent's WebSocket stream (`/v1/stream`, watch.md §4)
 * and prints the snapshot, then every change, until interrupted (SIGINT/SIGTERM end it with 0). Human
 * output is one line per item or event; `--json` one JSON object per line. A dropped connection is
 * resumed from the last index seen (with the server's epoch), backing off between attempts. With a
 * handler command (`-- cmd args`), each change is given to it as JSON on stdin instead (watch-handler.ts).
 */
import WebSocket from 'ws';
import { AgentClient, requestTimeoutMs } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { parseExactJson, shown, stringifyExact } from './output.ts';
import { onOutputFailure } from './stdout.ts';
import type { WatchHandler } from './watch-handler.ts';

export interface WatchOptions {
  /** Resume from this index (an X-Consul-Index); absent: a snapshot first. */
  index?: string;
  /** service_health only: healthy instances only. */
  passingOnly?: boolean;
  /** A command run for each change (watch-handler.ts) instead of printing it. */
  handler?: string[];
}

const subprotocol = 'registry.stream.v1';
const subscriptionId = 'watch';
/** Reconnect backoff: from this, doubling, with jitter, up to the maximum (watch.md §4.5). */
const reconnectDelayMsMin = 250;
const reconnectDelayMsMax = 30_000;
/** Reconnects in a row without a message in between before we give up. */
const reconnectAttemptsMax = 20;
/**
 * The agent sends a bookmark after 30 s without other messages; nothing at all for this long means the
 * link or the agent is dead (a frozen process keeps its TCP connections open), and the stream is
 * reconnected. The dashboard waits as long.
 */
const silenceMsMax = 75_000;
/** Close codes after which reconnecting cannot help (watch.md §4.7): policy, token expired, forbidden. */
const finalCloseCodes = new Set([1008, 4001, 4003]);

interface Line {
  type: 'snapshot' | 'upsert' | 'delete' | 'end_of_snapshot' | 'reset';
  index?: number;
  key?: string;
  value?: unknown;
  reason?: string;
}

type Message = Record<string, unknown> & { type?: string };

export async function watchCommand(ctx: CliContext, topic: string, key: string, o: WatchOptions): Promise<number> {
  if (topic === '') throw usageError('a topic is required');
  let resumeIndex: number | undefined;
  if (o.index !== undefined) {
    if (!/^\d+$/.test(o.index)) throw usageError(`--index: "${o.index}" is not an index`);
    resumeIndex = Number(o.index);
  }
  if (o.handler !== undefined && (o.handler.length === 0 || o.handler[0] === '')) throw usageError('a handler command is required after --');
  const watcher = new Watcher(ctx, topic, key, o.passingOnly === true, resumeIndex);
  if (o.handler !== undefined) {
    const { WatchHandler } = await import('./watch-handler.ts');
    watcher.handler = new WatchHandler(o.handler, topic, { stderr: ctx.stderr, env: ctx.env, pause: (p) => watcher.pause(p) });
  }
  return watcher.run();
}

class Watcher {
  /** With a handler, each change goes to it instead of stdout; the snapshot as one change. */
  handler: WatchHandler | undefined;
  /** The snapshot's items while they arrive, for the handler. */
  private snapshotItems: { key: string; value: unknown }[] = [];
  private lastIndex: number | undefined;
  private epoch: string | undefined;
  private ws: WebSocket | undefined;
  private stopping = false;
  private attempts = 0;
  private silenceTimer: NodeJS.Timeout | undefined;
  /** Whether the connection in use was cut for its silence. */
  private silenced = false;
  private paused = false;
  private done!: (code: number) => void;
  private fail!: (err: Error) => void;

  constructor(
    private readonly ctx: CliContext,
    private readonly topic: string,
    private readonly key: string,
    private readonly passingOnly: boolean,
    resumeIndex: number | undefined,
  ) {
    this.lastIndex = resumeIndex;
  }

  run(): Promise<number> {
    const stop = (signal: NodeJS.Signals) => {
      this.stopping = true;
      this.ws?.close(1000);
      if (this.handler === undefined) { this.done(0); return; }
      void this.handler.stop(signal).then(() => this.done(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // stdout that cannot take more ends the watch; roster.ts then names the failure (stdout.ts).
    const unlisten = onOutputFailure(() => { if (!this.stopping) { this.stopping = true; this.ws?.terminate(); this.done(0); } });
    return new Promise<number>((resolve, reject) => {
      this.done = resolve;
      this.fail = reject;
      this.connect(true);
    }).finally(() => {
      clearTimeout(this.silenceTimer);
      unlisten();
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    });
  }

  /** The stream's URL at the address in use (which moves on when one cannot be connected to). */
  private get url(): string {
    return `${this.ctx.client.baseUrl.replace(/^http/, 'ws')}/v1/stream`;
  }

  private connect(first: boolean): void {
    const base = this.ctx.client.baseUrl;
    // The upgrade gets as long as any other request's answer; past it, an error, then a close (reconnect).
    const ws = new WebSocket(this.url, [subprotocol], { headers: this.ctx.client.authHeaders(), handshakeTimeout: requestTimeoutMs });
    this.ws = ws;
    let opened = false;
    this.silenced = false;
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => {
        let message = body.trim() || `HTTP ${res.statusCode}`;
        try { message = (JSON.parse(body) as { message?: string }).message ?? message; } catch { /* plain text */ }
        this.stopping = true;
        ws.terminate();
        this.fail(new CliError(`the agent refused the stream: ${message}`));
      });
    });
    ws.on('open', () => {
      opened = true;
      this.listen(ws);
      const index = this.lastIndex;
      ws.send(JSON.stringify({
        op: 'subscribe', id: subscriptionId, topic: this.topic, key: this.key,
        ...(index !== undefined ? { index, ...(this.epoch !== undefined ? { epoch: this.epoch } : {}) } : {}),
        ...(this.passingOnly ? { filter: { passingOnly: true } } : {}),
      }));
    });
    ws.on('message', (data) => {
      this.attempts = 0;
      this.listen(ws);
      const message = this.parse(data.toString());
      if (message !== undefined) this.onMessage(message);
    });
    ws.on('error', (err) => {
      if (!opened && AgentClient.unreached(err) && this.ctx.client.failOver(base)) {
        // Not connected to this address: the next one is tried at once (the first time) or at the next reconnect.
        if (first && !this.stopping) { ws.removeAllListeners('close'); this.connect(true); }
        return;
      }
      if (first && !opened && !this.stopping) {
        this.stopping = true;
        this.fail(new CliError(handshakeTimedOut(err)
          ? `the agent at ${base} did not answer within ${requestTimeoutMs / 1000}s`
          : `cannot open the stream at ${this.url}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      }
    });
    ws.on('close', (code, reason) => {
      clearTimeout(this.silenceTimer);
      if (this.stopping || (first && !opened)) return;
      const why = this.silenced ? `nothing from the agent for ${silenceMsMax / 1000}s`
        : !opened ? `no answer to the upgrade within ${requestTimeoutMs / 1000}s or it failed`
        : shown(`${code}${reason.length > 0 ? ` ${reason.toString()}` : ''}`);
      if (finalCloseCodes.has(code)) { this.stopping = true; this.fail(new CliError(`the agent closed the stream: ${why}`)); return; }
      this.attempts += 1;
      if (this.attempts > reconnectAttemptsMax) { this.stopping = true; this.fail(new CliError(`the stream closed (${why}) and ${reconnectAttemptsMax} reconnects failed`)); return; }
      const delay = Math.min(reconnectDelayMsMax, reconnectDelayMsMin * 2 ** (this.attempts - 1)) * (0.5 + Math.random() / 2);
      this.ctx.stderr.write(`roster: stream closed (${why}); reconnecting in ${(delay / 1000).toFixed(1)}s\n`);
      setTimeout(() => { if (!this.stopping) this.connect(false); }, delay);
    });
  }

  /**
   * (Re)starts the silence timer of `ws`: past silenceMsMax without a message the connection is cut, which
   * reconnects. Not while paused: the stream is then not read on purpose.
   */
  private listen(ws: WebSocket): void {
    clearTimeout(this.silenceTimer);
    if (this.paused) return;
    this.silenceTimer = setTimeout(() => { this.silenced = true; ws.terminate(); }, silenceMsMax);
  }

  /** A message of the stream; one that is not JSON ends the watch (undefined). */
  private parse(text: string): Message | undefined {
    try {
      return parseExactJson(text) as Message;
    } catch (err) {
      this.stopping = true;
      this.ws?.terminate();
      this.fail(new CliError(`the agent at ${this.ctx.client.baseUrl} sent a stream message that is not JSON: ${(err as Error).message}`));
      return undefined;
    }
  }

  private onMessage(m: Message): void {
    const index = typeof m.index === 'number' ? m.index : undefined;
    switch (m.type) {
      case 'subscribed':
        this.epoch = typeof m.epoch === 'string' ? m.epoch : this.epoch;
        this.seen(index);
        return;
      case 'snapshot': {
        const keys = m.keys as string[];
        (m.items as unknown[]).forEach((value, i) => this.print({ type: 'snapshot', index, key: keys[i], value }));
        return;
      }
      case 'end_of_snapshot':
        this.seen(index);
        this.print({ type: 'end_of_snapshot', index });
        return;
      case 'event':
        this.seen(index);
        this.print({ type: m.op as 'upsert' | 'delete', index, key: m.key as string, ...(m.op === 'upsert' ? { value: m.value } : {}) });
        return;
      case 'batch':
        this.seen(index);
        for (const e of m.events as Message[]) this.print({ type: e.op as 'upsert' | 'delete', index, key: e.key as string, ...(e.op === 'upsert' ? { value: e.value } : {}) });
        return;
      case 'bookmark':
        this.seen(index);
        return;
      case 'reset':
        this.print({ type: 'reset', reason: String(m.reason) });
        return;
      case 'error': {
        this.stopping = true;
        this.ws?.close(1000);
        const message = typeof m.message === 'string' ? m.message : String(m.code);
        this.fail(m.code === 'unknown_topic' || m.code === 'bad_key' ? usageError(message) : new CliError(message));
        return;
      }
      default:
    }
  }

  private seen(index: number | undefined): void {
    if (index !== undefined && (this.lastIndex === undefined || index > this.lastIndex)) this.lastIndex = index;
  }

  /** Stops reading the stream while the handler is behind (see watch-handler.ts). */
  pause(paused: boolean): void {
    this.paused = paused;
    const ws = this.ws;
    if (ws === undefined) return;
    if (paused) { ws.pause(); clearTimeout(this.silenceTimer); return; }
    ws.resume();
    this.listen(ws);
  }

  /** The handler's share of a line: the snapshot gathered into one change, each event one change. */
  private toHandler(handler: WatchHandler, line: Line): void {
    if (line.type === 'snapshot') { this.snapshotItems.push({ key: line.key!, value: line.value }); return; }
    if (line.type === 'end_of_snapshot') {
      handler.push({ type: 'snapshot', index: line.index, items: this.snapshotItems });
      this.snapshotItems = [];
      return;
    }
    if (line.type === 'reset') { this.snapshotItems = []; return; }
    handler.push(line);
  }

  private print(line: Line): void {
    if (this.handler !== undefined) { this.toHandler(this.handler, line); return; }
    if (this.ctx.json) { this.ctx.outJson(line); return; }
    const c = this.ctx.colors;
    const at = line.index === undefined ? '' : `${line.index}`;
    if (line.type === 'reset') { this.ctx.out(`${c.yellow('reset')} ${shown(line.reason ?? '')} (a new snapshot follows)\n`); return; }
    if (line.type === 'end_of_snapshot') { this.ctx.out(`${c.dim(`${at} end of snapshot; watching for changes`)}\n`); return; }
    const label = line.type === 'upsert' ? c.green('upsert') : line.type === 'delete' ? c.red('delete') : c.dim('snapshot');
    const value = line.value === undefined ? '' : ` ${shown(stringifyExact(readable(line.value)))}`;
    this.ctx.out(`${at} ${label} ${shown(line.key ?? '')}${value}\n`);
  }
}

/** Whether a WebSocket error is `ws`'s handshakeTimeout elapsing. */
function handshakeTimedOut(err: Error): boolean {
  return err.message === 'Opening handshake has timed out';
}

/** For people: a KV entry's base64 Value shown as its text when it is printable UTF-8. */
function readable(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || !('Key' in value) || !('Value' in value)) return value;
  const v = (value as { Value: unknown }).Value;
  if (typeof v !== 'string') return value;
  const text = Buffer.from(v, 'base64').toString('utf8');
  // eslint-disable-next-line no-control-regex
  if (text.includes('\uFFFD') || /[\u0000-\u0008\u000e-\u001f]/.test(text)) return value;
  return { ...value, Value: text };
}
