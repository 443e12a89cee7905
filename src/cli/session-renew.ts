/**
 * `roster session renew <id>`: renews a session's TTL (as `PUT /v1/session/renew/<id>`) and prints the
 * renewed session; an unknown session exits 1.
 */
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { fields } from './output.ts';

interface Session {
  ID: string;
  Name: string;
  Node: string;
  TTL: string;
  Behavior: string;
  ModifyIndex: number;
}

export async function sessionRenew(ctx: CliContext, id: string): Promise<void> {
  if (id === '') throw usageError('a session id is required');
  const a = await ctx.client.put(`/v1/session/renew/${encodeURIComponent(id)}`);
  // Consul answers an unknown session with 404, the seed dialect with its notFound error (404 as well).
  if (a.status === 404) throw new CliError(`session "${id}" not found`);
  const renewed = await ctx.client.ok<Session[]>(Promise.resolve(a));
  if (renewed.length === 0) throw new CliError(`session "${id}" not found`);
  const s = renewed[0]!;
  if (ctx.json) { ctx.outJson(s); return; }
  ctx.out(fields([['ID', s.ID], ['Name', s.Name], ['Node', s.Node], ['TTL', s.TTL || '-'], ['Behavior', s.Behavior], ['ModifyIndex', String(s.ModifyIndex)]]));
}
