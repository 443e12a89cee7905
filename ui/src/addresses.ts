/**
 * Keys and names inside the dashboard's own addresses (/ui/kv/<key>, /ui/locks/<key>, /ui/services/<name>…).
 *
 * A browser resolves `.` and `..` path segments (written `%2E` too) before the page or the agent sees the
 * address, so a key such as `tmp/../secret/db` would open `secret/db`. In an address each segment is
 * percent-encoded, and a segment made of one or two dots after any number of `~` gets one more `~` in
 * front: `tmp/../secret/db` is `/ui/kv/tmp/~../secret/db`, `~.` is `~~.`. Reading drops that one `~`
 * again, so the mapping is one to one and every other segment (an ordinary key's) reads as written.
 */

/** A segment of a key or name that the address must escape: one or two dots after any number of `~`. */
const dotted = /^~*\.\.?$/;
/** The same in an address: at least the one `~` writing added. */
const escaped = /^~+\.\.?$/;

/** One segment of a key or name as it is written in an address. */
export function segmentToAddress(segment: string): string {
  return encodeURIComponent(dotted.test(segment) ? `~${segment}` : segment);
}

/** One segment of an address back to the key's or name's; undefined when it does not decode. */
export function segmentFromAddress(raw: string): string | undefined {
  let segment: string;
  try {
    segment = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  return escaped.test(segment) ? segment.slice(1) : segment;
}

/** A key (its `/` kept as separators) as the tail of an address. */
export function keyToAddress(key: string): string {
  return key.split('/').map(segmentToAddress).join('/');
}

/** The tail of an address back to its key; undefined when a segment does not decode. */
export function keyFromAddress(segments: string[]): string | undefined {
  const key = segments.map(segmentFromAddress);
  return key.some((s) => s === undefined) ? undefined : key.join('/');
}

/**
 * True when `path` has a `.` or `..` segment: a URL the browser builds from it (fetch included) would
 * name another path, so such a key cannot go into an API address and is sent in a request body instead.
 */
export function hasDotSegment(path: string): boolean {
  return path.split('/').some((s) => s === '.' || s === '..');
}
