import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `f` every 100 ms until it gives a value (a throw counts as "not yet"); fails naming `what`
 * after `ms`.
 */
export async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
