/**
 * Parses Prometheus text with the Prometheus project's own Python client
 * (`prometheus_client.parser.text_string_to_metric_families`, Debian's python3-prometheus-client, which
 * test/global-setup.ts installs), so a test checks the exposition against a real parser, not our reading of it.
 */
import { spawn } from 'node:child_process';

/** Debian's interpreter: the one apt's python3-prometheus-client is installed for (a pyenv python on PATH would not see it). */
export const debianPython = '/usr/bin/python3';

/** The Python module the parser lives in (global-setup checks that it imports). */
export const parserModule = 'prometheus_client.parser';

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  /** As the parser names it: a counter's family name has no `_total` (its samples do). */
  name: string;
  type: string;
  help: string;
  samples: PromSample[];
}

const script = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    samples = [{"name": s.name, "labels": s.labels, "value": s.value if math.isfinite(s.value) else repr(s.value)} for s in f.samples]
    out.append({"name": f.name, "type": f.type, "help": f.documentation, "samples": samples})
print(json.dumps(out))
`;

/** Parses `text`; rejects with the parser's own message when it refuses it. */
export function parsePrometheus(text: string, timeoutMs = 20_000): Promise<PromFamily[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(debianPython, ['-c', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`the Prometheus parser did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
    proc.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`the Prometheus parser refused the text (exit ${code}): ${err.trim().split('\n').pop()}`));
      else resolve(JSON.parse(out) as PromFamily[]);
    });
    proc.stdin.end(text);
  });
}

/** Every sample of every family, keyed `name{label="value",...}` with labels sorted: easy to diff. */
export function sampleMap(families: PromFamily[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of families) for (const s of f.samples) out.set(seriesKey(s.name, s.labels), s.value);
  return out;
}

export function seriesKey(name: string, labels: Record<string, string>): string {
  const parts = Object.keys(labels).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${parts.join(',')}}`;
}
