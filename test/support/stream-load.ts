/**
 * Hostile stream load for tests: an agent's resident memory read from /proc, a KV prefix filled with
 * large values, and WebSocket consumers that subscribe and then stop reading (their socket paused, so
 * the agent's writes pile up in kernel and agent buffers as they would behind a stalled client).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { tempDataDir, type Agent } from './agent.ts';

export const streamSubprotocol = 'registry.stream.v1';

/** A config file with `settings` (for example `{limits: {...}}`) in a fresh temporary directory. */
export function writeConfigFile(settings: unknown): string {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

/** The agent process's resident set (VmRSS), in bytes. */
export function agentRssBytes(agent: Agent): number {
  const status = readFileSync(`/proc/${agent.proc.pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (kb === null) throw new Error(`no VmRSS for pid ${agent.proc.pid}`);
  return Number(kb[1]) * 1024;
}

/** Samples the agent's RSS every `everyMs` until stopped; `stop()` gives the highest reading. */
export function sampleRss(agent: Agent, everyMs = 50): { max(): number; stop(): number } {
  let max = agentRssBytes(agent);
  const timer = setInterval(() => {
    try { max = Math.max(max, agentRssBytes(agent)); } catch { /* the process is gone: the test sees it elsewhere */ }
  }, everyMs);
  return { max: () => max, stop: () => { clearInterval(timer); return max; } };
}

/**
 * Writes `count` keys `<prefix><i>` of `valueBytes` each, `connections` at a time. Contents differ per
 * key and per `round` (an identical write changes nothing: pass a new round to rewrite the keys).
 */
export async function fillPrefix(agent: Agent, prefix: string, count: number, valueBytes: number, o: { connections?: number; round?: number } = {}): Promise<void> {
  const connections = o.connections ?? 8;
  const pool = new Pool(agent.url, { connections });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: connections }, async () => {
      while (next < count) {
        const i = next++;
        const body = Buffer.alloc(valueBytes, 97 + (i % 26));
        body.write(`${o.round ?? 0}:${i}:`);
        const r = await pool.request({ method: 'PUT', path: `/v1/kv/${prefix}${i}`, body });
        const text = await r.body.text();
        if (r.statusCode !== 200) throw new Error(`PUT ${prefix}${i}: ${r.statusCode} ${text}`);
      }
    }));
  } finally {
    await pool.close();
  }
}

export interface StalledStream {
  ws: WebSocket;
  /** Starts reading again (what was buffered, then anything after). */
  resume(): void;
  /** How the connection ended, as the client saw it (1006: cut without a close frame). */
  closed: Promise<{ code: number; reason: string }>;
  /** Messages read so far (none while paused). */
  messages(): number;
}

/**
 * Opens `count` stream connections, sends each the `subscriptions` (topic and key), then pauses the
 * socket so nothing more is read: the consumer a stalled or hostile client is. Connections the agent
 * refuses reject the returned promise.
 */
export async function openStalledStreams(agent: Agent, count: number, subscriptions: { topic: string; key: string }[], headers: Record<string, string> = {}): Promise<StalledStream[]> {
  const url = `ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`;
  const open = async (): Promise<StalledStream> => {
    const ws = new WebSocket(url, [streamSubprotocol], { headers });
    let n = 0;
    ws.on('message', () => { n += 1; });
    ws.on('error', () => { /* seen as the close */ });
    const closed = new Promise<{ code: number; reason: string }>((res) => ws.on('close', (code, reason) => res({ code, reason: reason.toString() })));
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('unexpected-response', (_req, r) => rej(new Error(`stream upgrade refused: ${r.statusCode}`)));
      ws.once('error', rej);
    });
    subscriptions.forEach((s, i) => ws.send(JSON.stringify({ op: 'subscribe', id: `s${i}`, topic: s.topic, key: s.key })));
    // ws resumes its socket itself once its parser has drained a large message: that must not end the stall.
    const socket = (ws as unknown as { _socket: Socket })._socket;
    const resume = socket.resume.bind(socket);
    socket.resume = () => socket;
    socket.pause();
    return { ws, resume: () => { socket.resume = resume; socket.resume(); }, closed, messages: () => n };
  };
  const out: StalledStream[] = [];
  for (let i = 0; i < count; i++) out.push(await open());
  return out;
}
