/**
 * `roster catalog services` (each service name with its tags) and `roster catalog nodes` (each node
 * with its id and address), like `consul catalog services -tags` and `consul catalog nodes`. `--json`
 * prints what the HTTP API answered.
 */
import type { CliContext } from './context.ts';
import { table } from './output.ts';

interface CatalogNode {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
}

export async function catalogServices(ctx: CliContext): Promise<void> {
  const services = await ctx.client.ok<Record<string, string[]>>(ctx.client.get('/v1/catalog/services'));
  if (ctx.json) { ctx.outJson(services); return; }
  const names = Object.keys(services).sort();
  if (names.length === 0) { ctx.out('No services\n'); return; }
  ctx.out(table(['Service', 'Tags'], names.map((name) => [name, services[name]!.join(',')]), ctx.colors));
}

export async function catalogNodes(ctx: CliContext): Promise<void> {
  const nodes = await ctx.client.ok<CatalogNode[]>(ctx.client.get('/v1/catalog/nodes'));
  if (ctx.json) { ctx.outJson(nodes); return; }
  if (nodes.length === 0) { ctx.out('No nodes\n'); return; }
  // Consul shows the first 8 characters of a node's id.
  ctx.out(table(['Node', 'ID', 'Address', 'DC'], nodes.map((n) => [n.Node, n.ID.slice(0, 8), n.Address, n.Datacenter]), ctx.colors));
}
