/**
 * Which agent the benches start: by default the compiled one (`dist/server/src/main.js`, what `npm start`,
 * the `roster` bin and the image run), built first with `npm run build` when a source file is newer than
 * it; with ROSTER_BENCH_AGENT=tsx, the TypeScript sources through tsx (as the tests run them), which
 * measures tsx's transpiled output instead of the shipped one.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repoRoot = resolve(import.meta.dirname, '../..');
const builtMain = join(repoRoot, 'dist/server/src/main.js');
/** The directories `npm run build` compiles (tsconfig.build.json's `include`). */
const sourceDirs = ['src', 'machines', 'cluster'];

/** The newest modification time of a .ts file under `dir`, in ms (0 when there is none). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function builtMs(): number {
  try { return statSync(builtMain).mtimeMs; } catch { return 0; }
}

let checked = false;

/** Builds the agent once per bench process if it is missing or older than a source file. */
function ensureBuilt(): void {
  if (checked) return;
  checked = true;
  const sources = Math.max(...sourceDirs.map((d) => newestSource(join(repoRoot, d))));
  if (builtMs() >= sources) return;
  process.stderr.write('bench: the compiled agent is missing or older than the sources; running npm run build\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The arguments to `node` that start the agent (before the agent's own flags). */
export function agentEntry(): string[] {
  if (process.env.ROSTER_BENCH_AGENT === 'tsx') return ['--import', 'tsx', join(repoRoot, 'src/main.ts')];
  ensureBuilt();
  return [builtMain];
}

/** How the agent runs, for a bench's header line. */
export function agentDescription(): string {
  return process.env.ROSTER_BENCH_AGENT === 'tsx' ? 'agent from the TypeScript sources through tsx' : 'compiled agent (dist/server, as npm start runs it)';
}
