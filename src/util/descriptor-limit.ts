/** The process's limit on open files, as Linux tells it. */
import { readFileSync } from 'node:fs';

/** The soft limit on open files from /proc/self/limits; undefined where it cannot be read or is unlimited. */
export function softDescriptorLimit(limits = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limits, 'utf8');
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
}
