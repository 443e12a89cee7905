/**
 * `node_meta` (config file: an object of strings) and `--node-meta key:value` (repeatable): this node's
 * metadata in the catalog, as Consul's agent setting of the same name. The file's pairs come first, a flag
 * replaces the file's value of its key. The pairs keep Consul's metadata rules (meta-rules.ts); a pair that
 * breaks one stops the start (exit 2).
 */
import { ConfigError } from './config-error.ts';
import { metaProblem } from './domain/meta-rules.ts';

export function nodeMeta(flags: readonly string[] | undefined, file: unknown): Record<string, string> {
  const pairs = new Map<string, string>();
  if (file !== undefined) {
    // config-file.ts checked that it is an object.
    for (const [key, value] of Object.entries(file as Record<string, unknown>)) {
      if (typeof value !== 'string') throw new ConfigError(`--config-file: node_meta.${key} must be a string, not ${JSON.stringify(value)}`);
      pairs.set(key, value);
    }
  }
  for (const flag of flags ?? []) {
    const colon = flag.indexOf(':');
    if (colon < 0) throw new ConfigError(`--node-meta ${JSON.stringify(flag)}: give it as key:value`);
    pairs.set(flag.slice(0, colon), flag.slice(colon + 1));
  }
  const meta = Object.fromEntries(pairs);
  const why = metaProblem(meta);
  if (why !== undefined) throw new ConfigError(`node_meta: ${why}`);
  return meta;
}
