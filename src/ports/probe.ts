import type { CheckStatus, HealthCheck } from '../domain/types.ts';

/** One probe's outcome; a probe never throws (a failure is a critical result with its reason). */
export interface ProbeResult {
  status: CheckStatus;
  output: string;
}

export type Probe = (signal?: AbortSignal) => Promise<ProbeResult>;

/** Builds the probe for a check from its definition, or undefined for kinds nothing probes. */
export type ProbeFactory = (check: HealthCheck) => Probe | undefined;
