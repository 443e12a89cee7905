/**
 * Consul's rules for metadata, of a service (`Meta`) and of a node (`node_meta`): at most 64 pairs; keys
 * of letters, digits, `_` and `-`, up to 128 characters, not starting `consul-` (Consul's own keys);
 * values up to 512 bytes.
 */
const metaPairsMax = 64;
const metaKeyBytesMax = 128;
const metaValueBytesMax = 512;

/** Why `meta` breaks the rules, in Consul's words, or undefined when it keeps them. */
export function metaProblem(meta: Record<string, string>): string | undefined {
  const pairs = Object.entries(meta);
  if (pairs.length > metaPairsMax) return `Node metadata cannot contain more than ${metaPairsMax} key/value pairs`;
  for (const [key, value] of pairs) {
    const why = key === '' ? 'Key cannot be blank'
      : !/^[a-zA-Z0-9_-]+$/.test(key) ? 'Key contains invalid characters'
      : key.length > metaKeyBytesMax ? `Key is too long (limit: ${metaKeyBytesMax} characters)`
      : key.startsWith('consul-') ? "Key prefix 'consul-' is reserved for internal use"
      : Buffer.byteLength(value) > metaValueBytesMax ? `Value is too long (limit: ${metaValueBytesMax} characters)` : undefined;
    if (why !== undefined) return `Couldn't load metadata pair ('${key}', '${value}'): ${why}`;
  }
  return undefined;
}
