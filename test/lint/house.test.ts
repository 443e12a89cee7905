// Goal: the house rules hold on the whole tree — no import cycles (type-only imports included),
// cluster/ sees src/ only through index modules, bench/ does not import test/ (dependency-cruiser, rules
// in .dependency-cruiser.cjs), and every file and function stays within its size plus the few
// correctness rules of eslint.config.js. A failure prints every violation, file and line.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import { describe, expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const cruised = ['src', 'cluster', 'machines', 'bench', 'ui/src', 'bin'];

interface CruiseViolation {
  from: string;
  to: string;
  rule: { name: string };
  cycle?: Array<{ name: string } | string>;
}

/** One line per violation: `rule: a → b → a` for a cycle, `rule: from → to` otherwise. */
function describeViolation(v: CruiseViolation): string {
  const path = v.cycle && v.cycle.length > 0 ? [v.from, ...v.cycle.map((c) => (typeof c === 'string' ? c : c.name))] : [v.from, v.to];
  return `${v.rule.name}: ${path.join(' → ')}`;
}

describe('house rules', () => {
  test('the import graph: no cycles, cluster/ through src/ index modules only, bench/ without test/', async () => {
    const depcruise = resolve(repoRoot, 'node_modules/.bin/depcruise');
    const args = [...cruised, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'];
    // depcruise exits non-zero when it finds violations; its JSON report is on stdout either way.
    const { stdout } = await promisify(execFile)(depcruise, args, { cwd: repoRoot, maxBuffer: 64 << 20 }).catch(
      (err: { stdout?: string; stderr?: string }) => {
        if (!err.stdout) throw new Error(`depcruise failed: ${err.stderr ?? String(err)}`);
        return { stdout: err.stdout };
      },
    );
    const report = JSON.parse(stdout) as { summary: { violations: CruiseViolation[]; totalCruised: number } };
    expect(report.summary.totalCruised).toBeGreaterThan(100);
    expect(report.summary.violations.map(describeViolation)).toEqual([]);
  }, 180_000);

  test('eslint: file and function sizes and the correctness rules', async () => {
    const eslint = new ESLint({ cwd: repoRoot });
    const results = await eslint.lintFiles(['.']);
    expect(results.length).toBeGreaterThan(100);
    const problems = results.flatMap((r) =>
      r.messages.map((m) => `${r.filePath.slice(repoRoot.length + 1)}:${m.line}:${m.column} ${m.ruleId ?? 'parse'}: ${m.message}`),
    );
    expect(problems).toEqual([]);
  }, 300_000);
});
