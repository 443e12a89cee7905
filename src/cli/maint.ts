/**
 * `roster maint`, like `consul maint`: `--enable [--reason <text>]` or `--disable` puts the agent's node
 * (or, with `--service <id>`, one of its services) in or out of maintenance mode; alone it lists what is
 * in maintenance on the agent: the node and each service, with the reason given.
 */
import { nodeMaintenanceCheckId, serviceMaintenancePrefix } from '../domain/maintenance.ts';
import { failureOf } from './client.ts';
import type { CliContext } from './context.ts';
import { usageError } from './errors.ts';
import { fields } from './output.ts';

export interface MaintOptions {
  enable?: boolean;
  disable?: boolean;
  reason?: string;
  service?: string;
}

interface Check {
  Node: string;
  CheckID: string;
  Notes: string;
  ServiceID: string;
}

export async function maint(ctx: CliContext, o: MaintOptions): Promise<void> {
  if (o.enable && o.disable) throw usageError('--enable and --disable cannot be combined');
  if (o.reason !== undefined && !o.enable) throw usageError('--reason is only given with --enable');
  if (o.service !== undefined && !o.enable && !o.disable) throw usageError('--service needs --enable or --disable');
  if (o.service === '') throw usageError('--service must not be empty');
  if (!o.enable && !o.disable) { await list(ctx); return; }
  const enable = o.enable === true;
  const path = o.service === undefined ? '/v1/agent/maintenance' : `/v1/agent/service/maintenance/${encodeURIComponent(o.service)}`;
  const a = await ctx.client.put(path, { query: { enable: String(enable), reason: o.reason || undefined } });
  if (a.status !== 200) throw failureOf(a);
  const what = o.service === undefined ? 'Node' : 'Service';
  if (ctx.json) { ctx.outJson({ ok: true, enabled: enable, ...(o.service !== undefined ? { service: o.service } : {}) }); return; }
  ctx.out(`${what} ${enable ? 'entered' : 'left'} maintenance mode\n`);
}

/** The maintenance checks of the agent: the node's and its services'. */
async function list(ctx: CliContext): Promise<void> {
  const checks = Object.values(await ctx.client.ok<Record<string, Check>>(ctx.client.get('/v1/agent/checks')));
  const node = checks.find((c) => c.CheckID === nodeMaintenanceCheckId);
  const services = checks.filter((c) => c.CheckID.startsWith(serviceMaintenancePrefix)).sort((a, b) => (a.ServiceID < b.ServiceID ? -1 : 1));
  if (ctx.json) {
    ctx.outJson({
      node: node === undefined ? null : { name: node.Node, reason: node.Notes },
      services: services.map((s) => ({ id: s.ServiceID, reason: s.Notes })),
    });
    return;
  }
  if (node === undefined && services.length === 0) { ctx.out('No maintenance\n'); return; }
  const blocks: string[] = [];
  if (node !== undefined) blocks.push(`Node:\n${indent(fields([['Name:', node.Node], ['Reason:', node.Notes]]))}`);
  for (const s of services) blocks.push(`Service:\n${indent(fields([['ID:', s.ServiceID], ['Reason:', s.Notes]]))}`);
  ctx.out(blocks.join('\n'));
}

function indent(text: string): string {
  return text.split('\n').map((line) => (line === '' ? line : `  ${line}`)).join('\n');
}
