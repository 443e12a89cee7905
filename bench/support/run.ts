/**
 * The frame every bench's main shares: cleanup runs exactly once, on the way out whatever the way, or on
 * Ctrl-C (then the bench exits 130); an error thrown by the body is printed and fails the run.
 */

/** On SIGINT: says so, runs `cleanup` and exits with 130. Returns whether that has begun. */
export function exitOnInterrupt(cleanup: () => Promise<void>): () => boolean {
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    process.stderr.write('bench: interrupted, stopping the server\n');
    void cleanup().finally(() => process.exit(130));
  });
  return () => interrupted;
}

export interface BenchRun {
  /** Marks the run failed (exit status 1) and, given a message, prints it; the run goes on. */
  fail(message?: string): void;
  /** Whether Ctrl-C has begun the cleanup: the body should stop and answer 130. */
  interrupted(): boolean;
}

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Runs `body`, then `cleanup` (once, also on Ctrl-C). Returns the exit status: 130 when the body answered
 * 130 (interrupted), 1 when it threw or anything called `fail`, else 0.
 */
export async function runBench(body: (run: BenchRun) => Promise<void | 130>, cleanup: (run: BenchRun) => Promise<void>): Promise<number> {
  let failed = false;
  let cleaned: Promise<void> | undefined;
  const run: BenchRun = {
    fail: (message) => {
      failed = true;
      if (message !== undefined) process.stderr.write(`bench: ${message}\n`);
    },
    interrupted: () => interrupted(),
  };
  const cleanupOnce = () => (cleaned ??= cleanup(run));
  const interrupted = exitOnInterrupt(cleanupOnce);
  try {
    if ((await body(run)) === 130) return 130;
  } catch (err) {
    run.fail(errorText(err));
  } finally {
    if (!interrupted()) await cleanupOnce();
  }
  return failed ? 1 : 0;
}
