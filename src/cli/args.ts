/**
 * Consul-style flags for the `roster` command: `-cas=5`, `-recurse`, `-http-addr=...` mean the same as
 * `--cas=5`, `--recurse`, `--http-addr=...`. Known long flags written with one dash are rewritten
 * before commander parses; nothing after `--` is touched, nor the command line `roster lock` runs.
 */

export interface FlagSpec {
  /** Long flag names (without dashes) of this command, e.g. "cas", "http-addr". */
  names: ReadonlySet<string>;
  /** Those that take a value, so the next argument is a value and not an operand. */
  takesValue: ReadonlySet<string>;
  /** Operands after which the rest of the line belongs to a child command (`roster lock <prefix> <command...>`). */
  operandsBeforeChild?: number;
  /** One-letter flags that take a value (`-n 3`, also written `-n=3` as Go's flag package allows). */
  shortTakesValue?: ReadonlySet<string>;
}

/** Go's strconv.ParseBool words, for Consul's `-flag=true` / `-flag=false` on flags without a value. */
const trueWords = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const falseWords = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);
const shortWithValue = /^-([a-zA-Z])(?:=(.*))?$/;

const singleDashLong = /^-([a-z][a-z0-9-]+)(=.*)?$/;
const doubleDashLong = /^--([a-z][a-z0-9-]+)(=.*)?$/;

/**
 * Rewrites the arguments of one (sub)command. `-name` becomes `--name` when `name` is one of its
 * long flags; `-cas -modify-index=N` (Consul's two-flag CAS) becomes `--cas=N`.
 */
export function normaliseFlags(args: readonly string[], spec: FlagSpec): string[] {
  const out: string[] = [];
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') { out.push(...args.slice(i)); break; }
    const short = shortWithValue.exec(arg);
    if (short !== null && spec.shortTakesValue?.has(short[1]!)) {
      const value = short[2] ?? args[i + 1];
      out.push(`-${short[1]}`, ...(value === undefined ? [] : [value]));
      if (short[2] === undefined) i += 1;
      continue;
    }
    const single = singleDashLong.exec(arg);
    const rewritten = single !== null && spec.names.has(single[1]!) ? `-${arg}` : arg;
    const long = doubleDashLong.exec(rewritten);
    if (long === null) {
      if (rewritten.startsWith('-') && rewritten !== '-') { out.push(rewritten); continue; }
      operands += 1;
      if (spec.operandsBeforeChild !== undefined && operands > spec.operandsBeforeChild) { out.push(...args.slice(i)); break; }
      out.push(rewritten);
      continue;
    }
    const name = long[1]!;
    if (name === 'cas' && long[2] === undefined) {
      const next = args[i + 1] === undefined ? null : /^--?modify-index(?:=(.*))?$/.exec(args[i + 1]!);
      if (next !== null) {
        const value = next[1] ?? args[i + 2];
        out.push(`--cas=${value ?? ''}`);
        i += next[1] === undefined ? 2 : 1;
        continue;
      }
    }
    if (long[2] !== undefined && spec.names.has(name) && !spec.takesValue.has(name)) {
      out.push(...booleanFlag(name, long[2].slice(1), spec));
      continue;
    }
    out.push(rewritten);
    if (long[2] === undefined && spec.takesValue.has(name) && i + 1 < args.length) {
      out.push(args[i + 1]!);
      i += 1;
    }
  }
  return out;
}

/** Arguments of `roster agent`: its flags with one dash become two (`-dev`, `-http-port=8600`). */
export function normaliseAgentFlags(args: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') { out.push(...args.slice(i)); break; }
    const single = singleDashLong.exec(arg);
    out.push(single !== null && names.has(single[1]!) ? `-${arg}` : arg);
  }
  return out;
}

/**
 * `--flag=true` is `--flag`; `--flag=false` is `--no-flag` where the command has one, else nothing (the
 * flag is off unless given). Any other word is left as written, for commander to refuse.
 */
function booleanFlag(name: string, value: string, spec: FlagSpec): string[] {
  if (trueWords.has(value)) return [`--${name}`];
  if (falseWords.has(value)) return spec.names.has(`no-${name}`) ? [`--no-${name}`] : [];
  return [`--${name}=${value}`];
}
