/**
 * Duplicate keys in the config file's JSON. JSON.parse keeps the last of two equal keys without a word, so
 * a file that sets `limits.grpc_max_conns` twice (two edits, a merge) would run with whichever came last
 * while its reader may believe the first. The config file refuses that as it refuses an unknown key.
 */

interface Frame {
  /** `{` or `[`. */
  kind: string;
  /** Where the value sits, as the error names it: `limits`, `checks[1]`; '' at the top. */
  path: string;
  keys: Set<string>;
  /** In an object: the key read last, and whether the next string is a key. In an array: the element's index. */
  lastKey: string;
  expectKey: boolean;
  index: number;
}

/** The first key an object of `text` (already known to be valid JSON) holds twice, with its path; undefined when none. */
export function duplicateKey(text: string): string | undefined {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (top?.kind === '{' && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return join(top.path, key);
        top.keys.add(key);
        top.lastKey = key;
        top.expectKey = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      const path = top === undefined ? '' : top.kind === '{' ? join(top.path, top.lastKey) : `${top.path}[${top.index}]`;
      stack.push({ kind: c, path, keys: new Set(), lastKey: '', expectKey: c === '{', index: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',' && top !== undefined) {
      if (top.kind === '{') top.expectKey = true;
      else top.index++;
    }
  }
  return undefined;
}

/** The index of the quote that ends the string starting at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
