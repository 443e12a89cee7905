/** What every probe returns and how it is called; the statuses are registry.md's "Health check status" words. */

export type CheckStatus = 'passing' | 'warning' | 'critical';

export interface ProbeResult {
  status: CheckStatus;
  /** Consul's output text for this kind of check (consul-compat.md §4). */
  output: string;
}

/** Runs one probe; never throws (every failure is a critical result with Consul's output text); honours signal (abort = stop and kill). */
export type Probe = (signal?: AbortSignal) => Promise<ProbeResult>;

export const passing = (output: string): ProbeResult => ({ status: 'passing', output });
export const critical = (output: string): ProbeResult => ({ status: 'critical', output });

/** Script and container exec checks: exit 0 passing, 1 warning, anything else (a signal too) critical. */
export function statusForExitCode(code: number | null | undefined): CheckStatus {
  if (code === 0) return 'passing';
  if (code === 1) return 'warning';
  return 'critical';
}
