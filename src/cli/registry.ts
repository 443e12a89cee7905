/**
 * The read-mostly client commands: `roster session list|info|create|destroy`, `roster members`,
 * `roster checks`. Human output is an aligned table (or `Key  value` lines for one item); `--json`
 * prints what the HTTP API answered.
 */
import { failureOf, keyPath } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { fields, shown, statusColor, table, type Colors } from './output.ts';

interface Session {
  ID: string;
  Name: string;
  Node: string;
  LockDelay: number;
  Behavior: string;
  TTL: string;
  NodeChecks: string[] | null;
  ServiceChecks: { ID: string }[] | null;
  /** The identity that created it (seed dialect, with authentication on). */
  Owner?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const nsPerSecond = 1e9;

function lockDelayText(ns: number): string {
  return `${ns / nsPerSecond}s`;
}

export async function sessionList(ctx: CliContext, o: { node?: string }): Promise<void> {
  const path = o.node !== undefined ? `/v1/session/node/${encodeURIComponent(o.node)}` : '/v1/session/list';
  if (o.node === '') throw usageError('--node must not be empty');
  const sessions = await ctx.client.ok<Session[]>(ctx.client.get(path));
  if (ctx.json) { ctx.outJson(sessions); return; }
  if (sessions.length === 0) { ctx.out('No sessions\n'); return; }
  ctx.out(table(['ID', 'Name', 'Node', 'TTL', 'Behavior', 'LockDelay'],
    sessions.map((s) => [s.ID, s.Name, s.Node, s.TTL || '-', s.Behavior, lockDelayText(s.LockDelay)]), ctx.colors));
}

async function sessionOf(ctx: CliContext, id: string): Promise<Session> {
  if (id === '') throw usageError('a session id is required');
  const found = await ctx.client.ok<Session[]>(ctx.client.get(`/v1/session/info/${encodeURIComponent(id)}`));
  if (found.length === 0) throw new CliError(`session "${id}" not found`);
  return found[0]!;
}

export async function sessionInfo(ctx: CliContext, id: string): Promise<void> {
  const s = await sessionOf(ctx, id);
  if (ctx.json) { ctx.outJson(s); return; }
  ctx.out(fields([
    ['ID', s.ID], ['Name', s.Name], ['Node', s.Node], ['TTL', s.TTL || '-'], ['Behavior', s.Behavior],
    ['LockDelay', lockDelayText(s.LockDelay)], ['NodeChecks', (s.NodeChecks ?? []).join(', ') || '-'],
    ['ServiceChecks', (s.ServiceChecks ?? []).map((c) => c.ID).join(', ') || '-'],
    ...(s.Owner !== undefined ? [['Owner', s.Owner] as [string, string]] : []),
    ['CreateIndex', String(s.CreateIndex)], ['ModifyIndex', String(s.ModifyIndex)],
  ]));
}

export async function sessionDestroy(ctx: CliContext, id: string): Promise<void> {
  // The agent answers true for an unknown id (as Consul does); a typo should not look like success.
  await sessionOf(ctx, id);
  const a = await ctx.client.put(`/v1/session/destroy/${encodeURIComponent(id)}`);
  if (a.status !== 200) throw failureOf(a);
  if (ctx.json) { ctx.outJson({ ok: true, id }); return; }
  ctx.out(`${ctx.colors.green('Success!')} Destroyed session: ${shown(id)}\n`);
}

export interface SessionCreateOptions {
  name?: string;
  ttl?: string;
  behavior?: string;
  lockDelay?: string;
  node?: string;
}

export async function sessionCreate(ctx: CliContext, o: SessionCreateOptions): Promise<void> {
  if (o.behavior !== undefined && o.behavior !== 'release' && o.behavior !== 'delete') throw usageError(`--behavior: "${o.behavior}" is not release or delete`);
  const body: Record<string, unknown> = {};
  if (o.name !== undefined) body.Name = o.name;
  if (o.ttl !== undefined) body.TTL = o.ttl;
  if (o.behavior !== undefined) body.Behavior = o.behavior;
  if (o.lockDelay !== undefined) body.LockDelay = o.lockDelay;
  if (o.node !== undefined) body.Node = o.node;
  const created = await ctx.client.ok<{ ID: string }>(ctx.client.put('/v1/session/create', { body }));
  if (ctx.json) ctx.outJson(created);
  else ctx.out(`${shown(created.ID)}\n`);
}

interface Member {
  Name: string;
  Addr: string;
  Port: number;
  Status: number;
  Tags: Record<string, string>;
}

const memberStatus: Record<number, string> = { 1: 'alive', 2: 'leaving', 3: 'left', 4: 'failed' };

export async function members(ctx: CliContext): Promise<void> {
  const list = await ctx.client.ok<Member[]>(ctx.client.get('/v1/agent/members'));
  if (ctx.json) { ctx.outJson(list); return; }
  ctx.out(table(['Node', 'Address', 'Status', 'DC'],
    list.map((m) => [m.Name, `${m.Addr}:${m.Port}`, memberState(m, ctx.colors), m.Tags.dc ?? '']), ctx.colors));
}

/** A member's status, and for a live one whose stream has stopped answering it, that it cannot use the log. */
function memberState(m: Member, colors: Colors): string {
  const status = statusColor(memberStatus[m.Status] ?? String(m.Status), colors);
  return m.Tags.log === 'unreachable' ? `${status} (log unreachable)` : status;
}

interface Check {
  Node: string;
  CheckID: string;
  Name: string;
  Status: string;
  Output: string;
  ServiceName: string;
}

const checkStates = new Set(['any', 'passing', 'warning', 'critical']);
/** Output shown in the table: its first line, cut to this many characters. */
const outputColumnMax = 60;

export interface ChecksOptions {
  state?: string;
  node?: string;
  service?: string;
}

/** Every check (`--state`, default any), or one node's (`--node`), or one service's (`--service`). */
export async function checks(ctx: CliContext, o: ChecksOptions): Promise<void> {
  const given = [o.state !== undefined && '--state', o.node !== undefined && '--node', o.service !== undefined && '--service'].filter(Boolean);
  if (given.length > 1) throw usageError(`${given.join(' and ')} cannot be combined`);
  if (o.state !== undefined && !checkStates.has(o.state)) throw usageError(`--state: "${o.state}" is not one of any, passing, warning, critical`);
  if (o.node === '' || o.service === '') throw usageError(`${o.node === '' ? '--node' : '--service'} must not be empty`);
  const path = o.node !== undefined ? `/v1/health/node/${keyPath(o.node)}`
    : o.service !== undefined ? `/v1/health/checks/${keyPath(o.service)}`
    : `/v1/health/state/${o.state ?? 'any'}`;
  const list = await ctx.client.ok<Check[]>(ctx.client.get(path));
  if (ctx.json) { ctx.outJson(list); return; }
  if (list.length === 0) { ctx.out('No checks\n'); return; }
  const output = (text: string) => {
    const first = (text ?? '').split('\n')[0]!.trim();
    return first.length > outputColumnMax ? `${first.slice(0, outputColumnMax - 1)}…` : first;
  };
  ctx.out(table(['Node', 'CheckID', 'Name', 'Status', 'Service', 'Output'],
    list.map((c) => [c.Node, c.CheckID, c.Name, statusColor(c.Status, ctx.colors), c.ServiceName || '-', output(c.Output)]), ctx.colors));
}
