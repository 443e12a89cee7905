/**
 * Container exec check (consul-compat.md §4 Container exec, Consul's "docker" check): create an exec
 * through the Docker Engine API, start it attached, then read its exit code. The engine is reached
 * over a unix socket or plain TCP; the output of the start call is kept like a script's.
 */
import http from 'node:http';
import { startDeadline, stoppedRunText, type Deadline } from './deadline.ts';
import { isDialError, splitHostPort, systemError } from './go-text.ts';
import { dockerHostDefault, engineReplyBytesMax, outputBytesMaxDefault } from './limits.ts';
import { capturedText, TailBuffer } from './tail-buffer.ts';
import { critical, statusForExitCode, type Probe, type ProbeResult } from './types.ts';

export interface ContainerExecProbeOptions {
  containerId: string;
  /** The command run in the container. @default [shell, '-c', script] */
  args?: string[];
  /** Run through shell when args is empty. */
  script?: string;
  /** @default $SHELL, else /bin/sh (of this process, as Consul's agent) */
  shell?: string;
  /** unix:///path or tcp://host:port. @default $DOCKER_HOST, else dockerHostDefault */
  dockerHost?: string;
  /** @default none (Consul's docker check has no timeout); when given, the engine calls are abandoned past it, but the process in the container is not killed (the Engine API has no exec kill). */
  timeoutMs?: number;
  /** The output keeps the last this many bytes. @default outputBytesMaxDefault (4096) */
  outputBytesMax?: number;
}

type Endpoint = { socketPath: string } | { host: string; port: number };

interface EngineReply {
  status: number;
  body: TailBuffer;
}

export function containerExecProbe(o: ContainerExecProbeOptions): Probe {
  const address = o.dockerHost || process.env['DOCKER_HOST'] || dockerHostDefault;
  const shell = o.shell || process.env['SHELL'] || '/bin/sh';
  const cmd = o.args !== undefined && o.args.length > 0 ? o.args : o.script !== undefined ? [shell, '-c', o.script] : undefined;
  return async (signal) => {
    if (cmd === undefined) return critical('no command to run in the container: give args or a script');
    const endpoint = parseEngineAddress(address);
    if (typeof endpoint === 'string') return critical(endpoint);
    const deadline = startDeadline(o.timeoutMs, signal);
    const output = new TailBuffer(o.outputBytesMax ?? outputBytesMaxDefault);
    try {
      return await execute(o.containerId, cmd, { endpoint, address, output, deadline, timeoutMs: o.timeoutMs });
    } finally {
      deadline.dispose();
    }
  };
}

/** unix:///path, tcp://host:port (http://host:port too); a string result is the error text. */
function parseEngineAddress(address: string): Endpoint | string {
  if (address.startsWith('unix://')) return { socketPath: address.slice('unix://'.length) };
  const tcp = /^(?:tcp|http):\/\/([^/]+)\/?$/.exec(address);
  const hostPort = tcp ? splitHostPort(tcp[1]!) : undefined;
  if (hostPort === undefined || typeof hostPort === 'string') return `unsupported container engine address ${address}: give unix:///path or tcp://host:port`;
  return hostPort;
}

interface Exchange {
  endpoint: Endpoint;
  address: string;
  output: TailBuffer;
  deadline: Deadline;
  timeoutMs: number | undefined;
}

/** The three Engine API calls; each answer's text is Consul's DockerClient one. */
async function execute(id: string, cmd: string[], x: Exchange): Promise<ProbeResult> {
  let step = 'create';
  try {
    const created = await call(x, 'POST', `/containers/${encodeURIComponent(id)}/exec`, {
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Cmd: cmd,
    });
    if (created.status === 404) return critical(`create exec failed for unknown container ${id}`);
    if (created.status === 409) return critical(`create exec failed since container ${id} is paused or stopped`);
    if (created.status !== 201) return critical(`create exec failed for container ${id} with status ${created.status}: ${created.body.text()}`);
    const execId = parseJson<{ Id?: unknown }>(created.body)?.Id;
    if (typeof execId !== 'string') return critical(`create exec response for container ${id} cannot be parsed: ${created.body.text()}`);

    step = 'start';
    const started = await call(x, 'POST', `/exec/${execId}/start`, { Detach: false, Tty: true }, x.output);
    if (started.status === 404) return critical(`start exec failed for container ${id}: invalid exec id ${execId}`);
    if (started.status === 409) return critical(`start exec failed since container ${id} is paused or stopped`);
    if (started.status !== 200) return critical(`start exec failed for container ${id} with status ${started.status}: body: ${started.body.text()}`);

    step = 'inspect';
    const inspected = await call(x, 'GET', `/exec/${execId}/json`);
    if (inspected.status === 404) return critical(`inspect exec failed for container ${id}: invalid exec id ${execId}`);
    if (inspected.status !== 200) return critical(`inspect exec failed for container ${id} with status ${inspected.status}: ${inspected.body.text()}`);
    const exit = parseJson<{ ExitCode?: unknown }>(inspected.body);
    if (exit === undefined) return critical(`inspect exec response for container ${id} cannot be parsed: ${inspected.body.text()}`);
    // A missing or null ExitCode (exec still running?) is not taken as 0: it reads as critical.
    const code = typeof exit.ExitCode === 'number' ? exit.ExitCode : undefined;
    return { status: statusForExitCode(code), output: capturedText(x.output) };
  } catch (err) {
    return critical(failureText(err, step, id, x));
  }
}

function failureText(error: unknown, step: string, id: string, x: Exchange): string {
  if (x.deadline.reason !== undefined) {
    return stoppedRunText(x.deadline.reason, x.timeoutMs, capturedText(x.output));
  }
  const e = systemError(error);
  if (isDialError(e)) return `cannot reach the container engine at ${x.address}: ${e.message}`;
  return `${step} exec failed for container ${id}: ${e.message}`;
}

function parseJson<T>(body: TailBuffer): T | undefined {
  try {
    const value: unknown = JSON.parse(body.text());
    return typeof value === 'object' && value !== null ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/** One Engine API request; the reply body goes into sink (the exec output) or a bounded buffer of its own. */
function call(x: Exchange, method: string, path: string, json?: unknown, sink?: TailBuffer): Promise<EngineReply> {
  const payload = json === undefined ? undefined : JSON.stringify(json);
  const headers: http.OutgoingHttpHeaders = payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) };
  const target = 'socketPath' in x.endpoint ? { socketPath: x.endpoint.socketPath } : { host: x.endpoint.host, port: x.endpoint.port };
  const body = sink ?? new TailBuffer(engineReplyBytesMax);
  return new Promise((resolve, reject) => {
    const request = http.request({ ...target, method, path, headers, agent: false, signal: x.deadline.signal });
    request.once('error', reject);
    request.once('response', (res) => {
      res.on('data', (chunk: Buffer) => body.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.once('error', reject);
      res.once('close', () => (res.complete ? undefined : reject(new Error('connection closed before the reply ended'))));
    });
    request.end(payload);
  });
}
