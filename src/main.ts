/**
 * The agent's entry point (`npm start`, `node dist/server/src/main.js`). Before the agent's modules load
 * (agent-main.ts, the composition root), it holds SIGHUP, whose default action would end the process while
 * they load (src/early-hangup.ts), and it checks the process's descriptor limit: loading opens a few
 * dozen files at once, and under a limit of about 64 Node.js stops with a bare EMFILE stack instead of a
 * reason. Below `descriptorsMin` the start stops with exit code 2 and says what to raise. `roster agent`
 * imports agent-main.ts itself, the CLI's own modules having loaded by then.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { holdHangups } from './early-hangup.ts';
import { softDescriptorLimit } from './util/descriptor-limit.ts';

/** Descriptors the agent needs to load and serve a handful of connections (it starts at about 100). */
export const descriptorsMin = 128;

/** True when this file is what node was asked to run, not an import. */
function isEntryModule(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryModule()) {
  holdHangups();
  const soft = softDescriptorLimit();
  if (soft !== undefined && soft < descriptorsMin) {
    process.stderr.write(`roster: the limit on open files is ${soft} (ulimit -n); the agent needs at least ${descriptorsMin} to start, `
      + 'and one per client connection, check and log stream besides: raise it (ulimit -n 65536 in the shell, LimitNOFILE= in a systemd unit)\n');
    process.exit(2);
  }
  const { main } = await import('./agent-main.ts');
  main(process.argv.slice(2));
}
