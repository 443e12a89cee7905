/** Builds the probe a check's definition asks for (the runtime's ProbeFactory). */
import type { HealthCheck } from '../domain/types.ts';
import type { Probe, ProbeFactory } from '../ports/probe.ts';
import { containerExecProbe } from './container-exec.ts';
import { settledInTime } from './deadline.ts';
import { grpcProbe } from './grpc.ts';
import { httpProbe } from './http.ts';
import { grpcTimeoutMsDefault, httpTimeoutMsDefault, scriptTimeoutMsDefault, tcpTimeoutMsDefault } from './limits.ts';
import type { OwnRequests } from './own-requests.ts';
import { scriptProbe } from './script.ts';
import { tcpProbe } from './tcp.ts';

/** What a script or container check reports where the agent runs none. */
const scriptsDisabledOutput = 'not run: script and container checks are disabled on this agent (enable_script_checks, enable_local_script_checks)';

const scriptsDisabled: Probe = () => Promise.resolve({ status: 'critical', output: scriptsDisabledOutput });

/**
 * The runtime's probe factory. Script and container checks run a command, so they run only while
 * `scriptsAllowed()` (read at each probe: a reload applies at the next one), whatever put them in the state
 * (a registration checks the same settings, but a snapshot restore, for one, brings whole records); else
 * they report critical saying why. HTTP probes tell `ownRequests` of their connections (OwnRequests).
 */
export function probeFactory(scriptsAllowed: () => boolean, ownRequests?: OwnRequests): ProbeFactory {
  return (check) => ((check.type === 'script' || check.type === 'docker') && !scriptsAllowed() ? scriptsDisabled : probeFor(check, ownRequests));
}

/** The probe of a check, settled by its timeout whatever it does (settledInTime); undefined for kinds nothing probes. */
export function probeFor(check: HealthCheck, ownRequests?: OwnRequests): Probe | undefined {
  const probe = probeOf(check, ownRequests);
  return probe === undefined ? undefined : settledInTime(probe, timeoutOf(check));
}

/** The timeout a check's probe runs with: its own, else its kind's default (none for container exec). */
function timeoutOf(check: HealthCheck): number | undefined {
  if (check.definition.timeoutMs > 0) return check.definition.timeoutMs;
  switch (check.type) {
    case 'http': return httpTimeoutMsDefault;
    case 'tcp': return tcpTimeoutMsDefault;
    case 'grpc': return grpcTimeoutMsDefault;
    case 'script': return scriptTimeoutMsDefault;
    default: return undefined;
  }
}

function probeOf(check: HealthCheck, ownRequests: OwnRequests | undefined): Probe | undefined {
  const d = check.definition;
  const timeout = d.timeoutMs > 0 ? { timeoutMs: d.timeoutMs } : {};
  const outputBytesMax = d.outputMaxSize;
  switch (check.type) {
    case 'http':
      return httpProbe({
        url: d.http!, ...timeout, outputBytesMax,
        ...(d.method ? { method: d.method } : {}), ...(d.header ? { header: d.header } : {}), ...(d.body !== undefined ? { body: d.body } : {}),
        ...(d.tlsSkipVerify ? { tlsSkipVerify: true } : {}), ...(d.tlsServerName ? { tlsServerName: d.tlsServerName } : {}),
        ...(d.disableRedirects ? { disableRedirects: true } : {}), ...(ownRequests ? { ownRequests } : {}),
      });
    case 'tcp': return tcpProbe({ address: d.tcp!, ...timeout });
    case 'grpc':
      return grpcProbe({
        target: d.grpc!, ...timeout, ...(d.grpcUseTls ? { useTls: true } : {}), ...(d.tlsSkipVerify ? { tlsSkipVerify: true } : {}),
        ...(d.tlsServerName ? { tlsServerName: d.tlsServerName } : {}),
      });
    case 'script': return scriptProbe({ args: d.args!, ...timeout, outputBytesMax });
    case 'docker':
      return containerExecProbe({ containerId: d.runtimeContainerId!, ...(d.args ? { args: d.args } : {}), ...(d.shell ? { shell: d.shell } : {}), ...timeout, outputBytesMax });
    default: return undefined;
  }
}
