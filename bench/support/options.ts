/**
 * The benches' command lines: node:util parseArgs (strict, no positionals, `--help`/`-h` always known) and
 * the checks every bench repeats — a number of seconds, a count, a comma list of counts, a subset of named
 * things — each refusing a bad value with the option's name and the accepted range.
 */
import { join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

const repoRoot = resolve(import.meta.dirname, '../..');

const help = { help: { type: 'boolean', short: 'h' } } as const;

/** The values of `argv` for `options` (plus --help); an unknown option or a positional throws. */
export function parseBenchArgs<const O extends OptionsConfig>(argv: string[], options: O) {
  const config: { args: string[]; strict: true; allowPositionals: false; options: O & typeof help } = {
    args: argv, strict: true, allowPositionals: false, options: { ...options, ...help },
  };
  return parseArgs(config).values;
}

/**
 * `--<name>` in seconds: a finite number above `min` (or equal to it when `minIncluded`) and at most `max`.
 * @default min 0 excluded, max Infinity
 */
export function seconds(name: string, raw: string | undefined, dflt: number, range: { min?: number; minIncluded?: boolean; max?: number } = {}): number {
  const { min = 0, minIncluded = false, max = Number.POSITIVE_INFINITY } = range;
  const s = Number(raw ?? String(dflt));
  const aboveMin = minIncluded ? s >= min : s > min;
  if (!Number.isFinite(s) || !aboveMin || s > max) {
    const span = max === Number.POSITIVE_INFINITY ? (min === 0 && !minIncluded ? 'positive' : `at least ${min}`) : `${minIncluded ? '[' : '('}${min}, ${max}]`;
    throw new Error(`--${name}: "${raw}" is not a number of seconds (${span})`);
  }
  return s;
}

/** `--<name>` as a whole number from `min` to `max`. */
export function count(name: string, raw: string | undefined, dflt: number, min: number, max: number): number {
  const n = Number(raw ?? String(dflt));
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: "${raw ?? dflt}" is not a whole number from ${min} to ${max}`);
  return n;
}

/** The non-empty items of a comma list. */
const items = (list: string) => list.split(',').map((s) => s.trim()).filter((s) => s !== '');

/** `--<name>` as a comma list of counts from 1 to `max` (`1,16,64`); at least one. */
export function countList(name: string, raw: string | undefined, dflt: string, max: number): number[] {
  const counts = items(raw ?? dflt).map((s) => count(name, s, 0, 1, max));
  if (counts.length === 0) throw new Error(`--${name}: give at least one count`);
  return counts;
}

/**
 * `--<name>` as a comma list of names out of `known` (all of them when absent), returned in `known`'s
 * order whatever order they were given in; at least one.
 */
export function namesOf<const K extends string>(name: string, raw: string | undefined, known: readonly K[]): K[] {
  const named = items(raw ?? known.join(','));
  for (const s of named) if (!(known as readonly string[]).includes(s)) throw new Error(`--${name}: "${s}" is not one of ${known.join(', ')}`);
  const chosen = known.filter((k) => named.includes(k));
  if (chosen.length === 0) throw new Error(`--${name}: name at least one of ${known.join(', ')}`);
  return chosen;
}

/** Where a bench's JSON results go: `path` when given, else `bench/results/<bench>-<ISO time>.json`. */
export function resultsPath(path: string | undefined, bench: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return resolve(path ?? join(repoRoot, 'bench', 'results', `${bench}-${stamp}.json`));
}

/**
 * A bench's options from its command line: `--help` or `-h` prints the usage and exits 0; arguments
 * `parse` refuses print why, then the usage, and exit 2.
 */
export function benchOptions<T>(usage: string, parse: (argv: string[]) => T): T {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  try {
    return parse(argv);
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n${usage}\n`);
    process.exit(2);
  }
}
