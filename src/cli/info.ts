/**
 * `roster info [--json]`: the agent's figures for an operator, as `consul info` prints them — the agent
 * itself, then each group of `/v1/agent/self`'s Stats (raft in Consul's names, the log, the runtime), one
 * `key = value` a line under its group's name. `--json` prints the whole `/v1/agent/self`.
 */
import type { CliContext } from './context.ts';
import { shown } from './output.ts';

interface Self {
  /** Version is the server version the dialect reports (Consul's release in the consul dialect); RosterVersion is Roster's own. */
  Config: { NodeName: string; NodeID: string; Datacenter: string; Version: string; RosterVersion?: string };
  DebugConfig?: { Dialect?: string };
  Stats: Record<string, Record<string, string>>;
}

export async function info(ctx: CliContext): Promise<void> {
  const self = await ctx.client.ok<Self>(ctx.client.get('/v1/agent/self'));
  if (ctx.json) { ctx.outJson(self); return; }
  const agent: Record<string, string> = {
    node_name: self.Config.NodeName, node_id: self.Config.NodeID, datacenter: self.Config.Datacenter, version: self.Config.RosterVersion ?? self.Config.Version,
    ...(self.Config.RosterVersion !== undefined && self.Config.RosterVersion !== self.Config.Version ? { consul_version: self.Config.Version } : {}),
    ...(self.DebugConfig?.Dialect !== undefined ? { dialect: self.DebugConfig.Dialect } : {}),
  };
  let text = '';
  for (const [group, figures] of [['agent', agent] as const, ...Object.entries(self.Stats)]) {
    text += `${shown(group)}:\n`;
    for (const key of Object.keys(figures).sort()) text += `\t${shown(key)} = ${shown(String(figures[key]))}\n`;
  }
  ctx.out(text);
}
