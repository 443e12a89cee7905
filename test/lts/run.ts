/**
 * `npm run test:lts`: the `portable` test project (see vitest.config.ts) on each Node.js LTS line besides the
 * development one — the official builds that test/support/node-dist.ts fetches from the npm registry. The
 * agents those tests start run on the Node this runner was started with (ROSTER_TEST_AGENT_NODE), since this
 * host's glibc cannot load the uWebSockets.js binding built for Node 22/24; the `roster` command and the
 * in-process layers run on the line under test.
 *
 * `npm run test:lts -- --agents [24]` turns it around: the `main` project on this runner's Node, with the
 * agents that test/support/agent.ts starts (most suites' agents) running on the line under test, under
 * Debian 13's glibc (which loads its binding). Not part of CI (it is the whole main project per line);
 * docs/testing.md gives a dated result.
 *
 * `npm run test:lts -- 24` runs only the lines named. With CI set, each line leaves `.vitest-report-node<N>.json`
 * (vitest's JSON report; when the line could not run at all, a stub counting one failed test), which .ci/run
 * adds to its closing line. Exits non-zero when any line fails; each line is bounded by `lineTimeoutMs`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../support/agent.ts';
import { nodeBinary, nodeOnDebianLibc, nodeReleases, type NodeLine } from '../support/node-dist.ts';

/** One line's whole run, fetch excluded; the portable project takes about two minutes on two busy cores. */
const lineTimeoutMs = 15 * 60_000;
const vitest = join(repoRoot, 'node_modules/vitest/vitest.mjs');
const reportOf = (line: NodeLine) => join(repoRoot, `.vitest-report-node${line}.json`);
/** The `node` the tests' agents run on (see test/support/agent.ts). */
const agentNode = process.env.ROSTER_TEST_AGENT_NODE || process.execPath;
/** Set by a SIGINT or SIGTERM: the running line is ended and no further line starts. */
let interrupted = false;
/** `--agents`: the main project with its agents on the line under test, instead of the portable project on it. */
const agentsMode = process.argv.includes('--agents');

/** The lines named on the command line, or all of them. */
function selectedLines(args: string[]): NodeLine[] {
  const all = Object.keys(nodeReleases).map(Number) as NodeLine[];
  const unknown = args.filter((a) => !all.includes(Number(a) as NodeLine));
  if (unknown.length > 0) throw new Error(`unknown Node.js line ${unknown.join(', ')}: the lines are ${all.join(', ')}`);
  return args.length === 0 ? all : all.filter((l) => args.includes(String(l)));
}

/**
 * Runs vitest's portable project on `node`, in its own process group so that the timeout ends the workers
 * too; resolves with whether it passed.
 */
function runPortable(line: NodeLine, node: string): Promise<boolean> {
  const env = agentsMode
    ? { ...process.env, ROSTER_TEST_AGENT_NODE: node }
    : { ...process.env, ROSTER_TEST_PORTABLE: '1', ROSTER_TEST_AGENT_NODE: agentNode, ROSTER_TEST_REPORT: reportOf(line) };
  const [runner, project] = agentsMode ? [process.execPath, 'main'] : [node, 'portable'];
  const proc = spawn(runner, [vitest, 'run', '--project', project], { cwd: repoRoot, env, stdio: 'inherit', detached: true });
  // The run has its own process group, so a Ctrl-C here does not reach it: pass the signal on.
  const end = (signal: NodeJS.Signals) => { try { process.kill(-proc.pid!, signal); } catch { /* already gone */ } };
  const forward = (signal: NodeJS.Signals) => { interrupted = true; end(signal); };
  process.on('SIGINT', forward).on('SIGTERM', forward);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      console.error(`test:lts: Node ${line} did not finish within ${lineTimeoutMs / 60_000} min; ending its run`);
      end('SIGKILL');
    }, lineTimeoutMs);
    proc.once('error', (err) => { console.error(`test:lts: ${err.message}`); });
    proc.once('close', (code) => {
      clearTimeout(timer);
      process.off('SIGINT', forward).off('SIGTERM', forward);
      resolve(code === 0);
    });
  });
}

/** Fetches the line's node, prints its version, runs the project; a line that cannot run counts as failed. */
async function runLine(line: NodeLine, agentVersion: string): Promise<boolean> {
  rmSync(reportOf(line), { force: true });
  let passed = false;
  try {
    const node = agentsMode ? nodeOnDebianLibc(line) : nodeBinary(line);
    const version = execFileSync(node, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
    console.log(agentsMode
      ? `\n=== test:lts: the main project on Node ${process.version}; agents on Node ${version} under Debian 13's glibc (${node})\n`
      : `\n=== test:lts: the portable project on Node ${version} (${node}); agents on Node ${agentVersion} (${agentNode})\n`);
    const started = Date.now();
    passed = await runPortable(line, node);
    console.log(`=== test:lts: Node ${version} ${passed ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - started) / 1000)} s`);
  } catch (err) {
    console.error(`test:lts: Node ${line} could not run: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (process.env.CI && !agentsMode && !existsSync(reportOf(line))) {
    writeFileSync(reportOf(line), JSON.stringify({ numPassedTests: 0, numFailedTests: 1, testResults: [], note: `Node ${line}: no report from vitest` }));
  }
  return passed;
}

const agentVersion = execFileSync(agentNode, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
const failed: NodeLine[] = [];
for (const line of selectedLines(process.argv.slice(2).filter((a) => a !== '--agents'))) {
  if (interrupted) break;
  if (!(await runLine(line, agentVersion))) failed.push(line);
}
if (failed.length > 0 || interrupted) {
  console.error(interrupted ? 'test:lts: interrupted' : `test:lts: failed on Node ${failed.join(', ')}`);
  process.exitCode = 1;
}
