/**
 * Reading an endpoint again every few seconds while a page is open, for what the stream does not carry
 * (the log's progress, a session's timer, a key's queue). One read at a time; `stop` when the page goes.
 */
export interface Poller { kick(): void; stop(): void }

export function poller(read: () => Promise<void>, everyMs: number): Poller {
  let timer: number | undefined;
  let inFlight = false;
  const once = () => {
    if (inFlight) return;
    inFlight = true;
    read().finally(() => { inFlight = false; });
  };
  return {
    kick: () => {
      once();
      timer ??= window.setInterval(once, everyMs);
    },
    stop: () => {
      window.clearInterval(timer);
      timer = undefined;
    },
  };
}
