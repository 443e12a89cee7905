/**
 * `roster reload`, `roster leave` and `roster force-leave <node> [--prune]`, like Consul's commands of the
 * same names: each sends the agent's operation (`PUT /v1/agent/reload|leave|force-leave/<node>`) and says
 * what was done; the agent's refusal (a config file that does not validate, an unknown node) exits 1. What
 * the agent says it left undone (X-Roster-Warning, seed dialect: changed settings that need a restart, a
 * live member not forced to leave) is said too, and exits 0: the operation itself went through.
 */
import { failureOf } from './client.ts';
import type { CliContext } from './context.ts';
import { usageError } from './errors.ts';

/** Sends the operation; the agent's warning, when it gave one (undefined otherwise). */
async function send(ctx: CliContext, path: string, query: Record<string, string | undefined> = {}): Promise<string | undefined> {
  const a = await ctx.client.put(path, { query });
  if (a.status !== 200) throw failureOf(a);
  return a.headers.get('x-roster-warning') ?? undefined;
}

function done(ctx: CliContext, text: string, json: Record<string, unknown>, warning?: string): void {
  if (ctx.json) ctx.outJson({ ok: true, ...json, ...(warning === undefined ? {} : { warning }) });
  else ctx.out(`${text}\n`);
}

export async function reload(ctx: CliContext): Promise<void> {
  const warning = await send(ctx, '/v1/agent/reload');
  done(ctx, 'Configuration reload triggered', {}, warning);
  if (warning !== undefined && !ctx.json) ctx.stderr.write(`roster: warning: ${warning}\n`);
}

export async function leave(ctx: CliContext): Promise<void> {
  done(ctx, 'Graceful leave complete', {}, await send(ctx, '/v1/agent/leave'));
}

export async function forceLeave(ctx: CliContext, node: string, o: { prune?: boolean }): Promise<void> {
  if (node === '') throw usageError('a node name is required');
  const warning = await send(ctx, `/v1/agent/force-leave/${encodeURIComponent(node)}`, { prune: o.prune ? '' : undefined });
  done(ctx, warning === undefined ? `Node ${node} forced to leave` : `Node ${node} not forced to leave: ${warning}`, { node }, warning);
}
