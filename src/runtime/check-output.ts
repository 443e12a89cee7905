/**
 * The bounds of a check's recorded output. A probe's output is recorded here, whatever its kind, within its
 * check's output size (OutputMaxSize, which only lowers the agent's 4096 bytes) plus
 * checkOutputFramingBytesMax for the words a probe writes around what it captured (`HTTP GET <url>: 200 OK
 * Output: `, `Captured … of … bytes`, `Timed out (30s) running check`); a longer output keeps its last
 * bytes, as the probes keep a body's or a script's. TTL updates keep their first bytes (the HTTP route) and
 * alias outputs theirs (alias-state.ts), as Consul's do.
 */
import { checkOutputBytesMax, checkOutputFramingBytesMax } from '../domain/limits.ts';
import type { HealthCheck } from '../domain/types.ts';

/** A check's output size: its OutputMaxSize, which only lowers the agent's cap. */
export function outputBytesOf(check: HealthCheck): number {
  const size = check.definition.outputMaxSize;
  return size > 0 ? Math.min(size, checkOutputBytesMax) : checkOutputBytesMax;
}

/**
 * A probe's output as recorded: whole while it is at most `size` plus checkOutputFramingBytesMax bytes, else
 * its last `size` bytes behind `Captured <size> of <total> bytes\n...\n` (a character cut in two at the front
 * becomes U+FFFD, as in a script's captured output).
 */
export function recordedProbeOutput(output: string, size: number): string {
  if (output.length <= size + checkOutputFramingBytesMax && Buffer.byteLength(output) <= size + checkOutputFramingBytesMax) return output;
  const bytes = Buffer.from(output);
  return `Captured ${size} of ${bytes.length} bytes\n...\n${bytes.subarray(bytes.length - size).toString('utf8')}`;
}

/** The first `max` bytes of `text` as UTF-8 (a character cut in two is dropped). */
export function headBytes(text: string, max: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  return bytes.subarray(0, max).toString().replace(/\uFFFD$/, '');
}
