/**
 * The handler of `roster watch … -- <command> [args…]`, as `consul watch` runs one: for each change the
 * command is started with the change as JSON on its stdin (one argument runs through `sh -c`, several
 * directly; stdout and stderr are the watch's). One runs at a time, in the order the changes came; a
 * handler that fails or cannot be started is reported on stderr and the watch goes on. While too many
 * changes wait, the stream is paused (the agent then holds them, or drops the subscriber, which resumes
 * from the last index it saw).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { stringifyExact } from './output.ts';

/** Changes waiting for the handler beyond which the stream is paused. */
export const handlerQueueHigh = 1_000;
/** ...and at or below which it is resumed. */
export const handlerQueueLow = 100;

export interface Change {
  /** What the JSON says it is (snapshot, upsert, delete). */
  type: string;
  index?: number | undefined;
  key?: string | undefined;
  /** A snapshot's items, each `{key, value}`. */
  items?: { key: string; value: unknown }[];
}

export interface HandlerHooks {
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  /** Called with true when the queue is too long, false when it has drained enough. */
  pause(paused: boolean): void;
}

export class WatchHandler {
  private readonly queue: Change[] = [];
  private running: ChildProcess | undefined;
  private paused = false;
  private stopped = false;
  private idle: (() => void) | undefined;

  constructor(private readonly command: readonly string[], private readonly topic: string, private readonly hooks: HandlerHooks) {}

  push(change: Change): void {
    if (this.stopped) return;
    this.queue.push(change);
    if (!this.paused && this.queue.length >= handlerQueueHigh) { this.paused = true; this.hooks.pause(true); }
    if (this.running === undefined) void this.drain();
  }

  /** Starts no more handlers; a running one gets `signal` and is waited for. */
  stop(signal: NodeJS.Signals): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    if (this.running === undefined) return Promise.resolve();
    this.running.kill(signal);
    return new Promise((resolve) => { this.idle = resolve; });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      const change = this.queue.shift()!;
      if (this.paused && this.queue.length <= handlerQueueLow) { this.paused = false; this.hooks.pause(false); }
      await this.runOne(change);
    }
    this.idle?.();
  }

  private runOne(change: Change): Promise<void> {
    const [file, ...args] = this.command.length === 1 ? ['sh', '-c', this.command[0]!] : this.command;
    const what = `${change.type}${change.key !== undefined ? ` ${change.key}` : ''}${change.index !== undefined ? ` at index ${change.index}` : ''}`;
    return new Promise((resolve) => {
      const child = spawn(file!, args, {
        stdio: ['pipe', 'inherit', 'inherit'],
        env: { ...this.hooks.env, ROSTER_WATCH_TOPIC: this.topic, ROSTER_WATCH_INDEX: change.index === undefined ? '' : String(change.index) },
      });
      this.running = child;
      const done = () => { this.running = undefined; resolve(); };
      child.once('error', (err) => {
        this.hooks.stderr.write(`roster: cannot run the handler ${file}: ${err.message}; the watch goes on\n`);
        done();
      });
      child.once('exit', (code, signal) => {
        if (code !== 0) {
          const how = code === null ? `was killed by ${signal} (${128 + (constants.signals[signal!] ?? 0)})` : `exited ${code}`;
          this.hooks.stderr.write(`roster: the handler ${how} for ${what}; the watch goes on\n`);
        }
        done();
      });
      // A handler that does not read its stdin closes it early: that is not an error of the watch.
      child.stdin!.on('error', () => {});
      child.stdin!.end(`${stringifyExact(change)}\n`);
    });
  }
}
