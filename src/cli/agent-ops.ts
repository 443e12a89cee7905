/**
 * `roster reload`, `roster leave` and `roster force-leave <node> [--prune]`, like Consul's commands of the
 * same names: each sends the agent's operation (`PUT /v1/agent/reload|leave|force-leave/<node>`) and says
 * what was done; the agent's refusal (a config file that does not validate, an unknown node) exits 1.
 */
import { failureOf } from './client.ts';
import type { CliContext } from './context.ts';
import { usageError } from './errors.ts';

async function send(ctx: CliContext, path: string, query: Record<string, string | undefined>, done: string, json: Record<string, unknown>): Promise<void> {
  const a = await ctx.client.put(path, { query });
  if (a.status !== 200) throw failureOf(a);
  if (ctx.json) { ctx.outJson({ ok: true, ...json }); return; }
  ctx.out(`${done}\n`);
}

export async function reload(ctx: CliContext): Promise<void> {
  await send(ctx, '/v1/agent/reload', {}, 'Configuration reload triggered', {});
}

export async function leave(ctx: CliContext): Promise<void> {
  await send(ctx, '/v1/agent/leave', {}, 'Graceful leave complete', {});
}

export async function forceLeave(ctx: CliContext, node: string, o: { prune?: boolean }): Promise<void> {
  if (node === '') throw usageError('a node name is required');
  await send(ctx, `/v1/agent/force-leave/${encodeURIComponent(node)}`, { prune: o.prune ? '' : undefined }, `Node ${node} forced to leave`, { node });
}
