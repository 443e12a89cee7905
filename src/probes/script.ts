/**
 * Script check (consul-compat.md §4 Script): args run without a shell, stdout and stderr into one
 * capture, the exit code sets the status. The child leads its own process group so a timeout can
 * kill everything it started, not just the first process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { startDeadline, stoppedRunText } from './deadline.ts';
import { systemError } from './go-text.ts';
import { outputBytesMaxDefault, scriptTimeoutMsDefault } from './limits.ts';
import { capturedText, TailBuffer } from './tail-buffer.ts';
import { critical, statusForExitCode, type Probe, type ProbeResult } from './types.ts';

export interface ScriptProbeOptions {
  /** The executable and its arguments; no shell is involved. */
  args: string[];
  /** Past it the whole process group is killed. @default scriptTimeoutMsDefault (30 s) */
  timeoutMs?: number;
  /** The output keeps the last this many bytes. @default outputBytesMaxDefault (4096) */
  outputBytesMax?: number;
  /** Added to (and overriding) this process's environment. @default none */
  env?: Record<string, string>;
}

export function scriptProbe(o: ScriptProbeOptions): Probe {
  const timeoutMs = o.timeoutMs ?? scriptTimeoutMsDefault;
  return (signal) => {
    const [file, ...args] = o.args;
    if (file === undefined) return Promise.resolve(critical('no command to run: args is empty'));
    if (signal?.aborted) return Promise.resolve(critical(stoppedRunText('canceled', timeoutMs, '')));
    return run(file, args, o, timeoutMs, signal);
  };
}

function run(file: string, args: string[], o: ScriptProbeOptions, timeoutMs: number, signal: AbortSignal | undefined): Promise<ProbeResult> {
  const output = new TailBuffer(o.outputBytesMax ?? outputBytesMaxDefault);
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(file, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: o.env ? { ...process.env, ...o.env } : process.env });
    } catch (err) {
      return resolve(critical(spawnErrorText(file, err)));
    }
    const deadline = startDeadline(timeoutMs, signal);
    let settled = false;
    const settle = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      deadline.dispose();
      resolve(result);
    };
    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
    child.once('error', (err) => settle(critical(spawnErrorText(file, err))));
    // 'close' waits for the pipes too: a background child still holding them keeps the check running, as Go's Wait does.
    child.once('close', (code) => settle({ status: statusForExitCode(code), output: capturedText(output) }));
    deadline.signal.addEventListener(
      'abort',
      () => {
        killGroup(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
        settle(critical(stoppedRunText(deadline.reason ?? 'canceled', timeoutMs, capturedText(output))));
      },
      { once: true },
    );
  });
}

/** SIGKILL to the child's process group (it was spawned detached, so it leads one). */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Go's exec errors: `exec: "x": executable file not found in $PATH` for a name, `fork/exec /p: no such file or directory` for a path. */
export function spawnErrorText(file: string, error: unknown): string {
  const e = systemError(error);
  const why = e.code === 'ENOENT' ? 'no such file or directory' : e.code === 'EACCES' ? 'permission denied' : e.message;
  if (file.includes('/')) return `fork/exec ${file}: ${why}`;
  return `exec: "${file}": ${e.code === 'ENOENT' ? 'executable file not found in $PATH' : why}`;
}
