/**
 * Compiles the agent and the CLI the way `npm run build` does, into another directory: the "build" script
 * of package.json is run with its output directory (dist/server) replaced, so the tests check the same
 * steps users run and no test depends on, or overwrites, the checkout's own dist/server.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../support/agent.ts';

export function buildServer(outDir: string): void {
  const scripts = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const build = scripts.build;
  if (build === undefined || !build.includes('dist/server')) throw new Error('package.json has no "build" script writing dist/server');
  const quoted = `'${outDir.replaceAll("'", "'\\''")}'`;
  execFileSync('sh', ['-c', build.replaceAll('dist/server', quoted)], {
    cwd: repoRoot, stdio: 'pipe', timeout: 240_000, env: { ...process.env, PATH: `${join(repoRoot, 'node_modules/.bin')}:${process.env.PATH ?? ''}` },
  });
}
