/**
 * Turns a parsed filter into a predicate over rendered JSON records, checking it against a selector
 * schema first as bexpr does when Consul creates the filter: the selector must exist, the operator
 * must suit the field type, the value must coerce to the field type, a pattern must compile. All of
 * these are compile-time errors; evaluation itself never fails.
 */
import { FilterError, type FilterPosition } from './errors.ts';
import { goQuote, goQuoteList, parseGoBool, parseGoFloat, parseGoInt, parseGoUint, type Parsed } from './go-strconv.ts';
import type { Expr, MatchExpr, MatchOp, Selector } from './ast.ts';
import { parseFilter } from './parse.ts';
import { compilePattern, patternBudget, type PatternBudget } from './pattern.ts';
import type { FieldType, Schema } from './schema.ts';

export type FilterPredicate = (record: unknown) => boolean;

/**
 * What a predicate has done, counted as it runs: a unit for each clause tried and each list element or
 * character of text a clause looked at. A caller trying it on many records reads it to pause.
 */
export interface FilterWork {
  units: number;
}

type Where = (at: number) => FilterPosition;
/** What compiling one expression carries along: where an offset is, what its patterns may still take. */
interface Context {
  where: Where;
  patterns: PatternBudget;
  work: FilterWork;
}
/**
 * A map value is a string, except that §5 also lets `is empty` / `is not empty` test it (its example
 * `Node.Meta["rack"] is not empty`; bexpr itself rejects that operator there, Consul answers 500).
 */
type Resolved = FieldType | 'mapValue';
type Kind = 'string' | 'int' | 'uint' | 'float' | 'bool' | 'stringList' | 'stringMap' | 'mapValue' | 'struct' | 'structList';
type Leaf = (value: unknown) => boolean;
/** How to get from a record to the selected value: a struct field, a map key, or each list element. */
type Step = { kind: 'field' | 'key'; name: string } | { kind: 'each' };

/** Parses `expression`, validates it against `schema` and returns the predicate, counting into `work`; throws FilterError. */
export function compileFilter(expression: string, schema: Schema, work: FilterWork = { units: 0 }): FilterPredicate {
  const { expr, position } = parseFilter(expression);
  return compile(expr, schema, { where: position, patterns: patternBudget(), work });
}

/** Left before right, as bexpr validates, so the first error reported is the same one. */
function compile(expr: Expr, schema: Schema, cx: Context): FilterPredicate {
  switch (expr.kind) {
    case 'or': {
      const operands = chainOf(expr).map((operand) => compile(operand, schema, cx));
      return (record) => operands.some((operand) => operand(record));
    }
    case 'and': {
      const operands = chainOf(expr).map((operand) => compile(operand, schema, cx));
      return (record) => operands.every((operand) => operand(record));
    }
    case 'not': {
      const operand = compile(expr.operand, schema, cx);
      return (record) => !operand(record);
    }
    case 'match':
      return compileMatch(expr, schema, cx);
  }
}

/** `a and (b and (c ...))` as [a, b, c, ...]: long chains then neither compile nor run recursively. */
function chainOf(expr: Binary): Expr[] {
  const operands: Expr[] = [];
  let rest: Expr = expr;
  for (; isBinary(rest, expr.kind); rest = rest.right) operands.push(rest.left);
  operands.push(rest);
  return operands;
}

type Binary = Extract<Expr, { kind: 'or' | 'and' }>;

function isBinary(expr: Expr, kind: Binary['kind']): expr is Binary {
  return expr.kind === kind;
}

const operatorsOf: Record<Kind, readonly MatchOp[]> = {
  string: ['Equal', 'Not Equal', 'In', 'Not In', 'Matches', 'Not Matches'],
  int: ['Equal', 'Not Equal'],
  uint: ['Equal', 'Not Equal'],
  float: ['Equal', 'Not Equal'],
  bool: ['Equal', 'Not Equal'],
  mapValue: ['Equal', 'Not Equal', 'In', 'Not In', 'Matches', 'Not Matches', 'Is Empty', 'Is Not Empty'],
  stringList: ['In', 'Not In', 'Is Empty', 'Is Not Empty'],
  stringMap: ['Is Empty', 'Is Not Empty', 'In', 'Not In'],
  struct: [],
  structList: ['Is Empty', 'Is Not Empty'],
};

/** How each operator is written, for the `expected` list of an operator error. */
const spellings: Record<MatchOp, readonly string[]> = {
  Equal: ['=='],
  'Not Equal': ['!='],
  In: ['in', 'contains'],
  'Not In': ['not in', 'not contains'],
  'Is Empty': ['is empty'],
  'Is Not Empty': ['is not empty'],
  Matches: ['matches'],
  'Not Matches': ['not matches'],
};

const negations: ReadonlySet<MatchOp> = new Set(['Not Equal', 'Not In', 'Is Not Empty', 'Not Matches']);

/** §5: a missing map key makes `!=`, `not …` and `is empty` true and everything else false. */
const trueWhenKeyMissing: ReadonlySet<MatchOp> = new Set(['Not Equal', 'Not In', 'Not Matches', 'Is Empty']);

function compileMatch(match: MatchExpr, schema: Schema, cx: Context): FilterPredicate {
  const { where } = cx;
  const { steps, type } = resolve(match.selector, schema, where);
  const kind = kindOf(type);
  if (!operatorsOf[kind].includes(match.op)) {
    const detail = `Invalid match operator ${goQuote(match.op)} for selector ${goQuoteList(match.selector.path)}`;
    throw new FilterError(detail, where(match.selector.at[0] ?? 0), operatorsOf[kind].flatMap((op) => spellings[op]));
  }
  const positive = positiveLeaf(match, kind, cx);
  const leaf: Leaf = negations.has(match.op) ? (value) => !positive(value) : positive;
  const missing = trueWhenKeyMissing.has(match.op);
  const { work } = cx;
  return (record) => {
    work.units++;
    return walk(record, steps, 0, leaf, missing, work);
  };
}

function kindOf(type: Resolved): Kind {
  if (typeof type === 'string') return type;
  return 'struct' in type ? 'struct' : 'structList';
}

function resolve(selector: Selector, schema: Schema, where: Where): { steps: Step[]; type: Resolved } {
  const steps: Step[] = [];
  let type: Resolved = { struct: schema };
  selector.path.forEach((name, i) => {
    const next = descend(type, name, steps);
    if (next === undefined) {
      const detail = `Selector ${goQuoteList(selector.path.slice(0, i + 1))} is not valid`;
      throw new FilterError(detail, where(selector.at[i] ?? 0), subFieldNames(type));
    }
    type = next;
  });
  return { steps, type };
}

/** One selector element down from `type`; undefined where bexpr has no such sub-field. */
function descend(type: Resolved, name: string, steps: Step[]): Resolved | undefined {
  if (type === 'stringMap') {
    steps.push({ kind: 'key', name });
    return 'mapValue';
  }
  if (typeof type === 'string') return undefined;
  const fields = 'struct' in type ? type.struct : type.structList;
  if (!Object.hasOwn(fields, name)) return undefined; // never a prototype member such as "constructor"
  // bexpr hands the rest of the selector to every element of a slice: an implicit ANY.
  if ('structList' in type) steps.push({ kind: 'each' });
  steps.push({ kind: 'field', name });
  return fields[name];
}

function subFieldNames(type: Resolved): string[] {
  if (typeof type === 'string') return [];
  return Object.keys('struct' in type ? type.struct : type.structList).sort();
}

function walk(value: unknown, steps: readonly Step[], i: number, leaf: Leaf, missing: boolean, work: FilterWork): boolean {
  const step = steps[i];
  if (step === undefined) return leaf(value);
  if (step.kind === 'each') {
    const items = asList(value);
    work.units += items.length;
    return items.some((item) => walk(item, steps, i + 1, leaf, missing, work));
  }
  const object = asObject(value);
  if (Object.hasOwn(object, step.name)) return walk(object[step.name], steps, i + 1, leaf, missing, work);
  // An absent struct field is its zero value; an absent map key has its own rule.
  return step.kind === 'key' ? missing : walk(undefined, steps, i + 1, leaf, missing, work);
}

/** The non-negated form of the operator (Equal, In, Is Empty, Matches) for this field kind. */
function positiveLeaf(match: MatchExpr, kind: Kind, cx: Context): Leaf {
  const raw = match.value ?? '';
  const { work } = cx;
  switch (match.op) {
    case 'Is Empty':
    case 'Is Not Empty':
      if (kind === 'mapValue') return (v) => asString(v) === '';
      return kind === 'stringMap' ? (v) => Object.keys(asObject(v)).length === 0 : (v) => asList(v).length === 0;
    case 'In':
    case 'Not In':
      if (kind === 'stringMap') return (v) => Object.hasOwn(asObject(v), raw);
      if (kind === 'stringList') {
        return (v) => {
          const items = asList(v);
          work.units += items.length;
          return items.some((item) => asString(item) === raw);
        };
      }
      return (v) => {
        const text = asString(v);
        work.units += text.length;
        return text.includes(raw);
      };
    case 'Matches':
    case 'Not Matches': {
      const test = compilePattern(raw, cx.where(match.valueAt ?? 0), cx.patterns);
      return (v) => {
        const text = asString(v);
        work.units += text.length;
        return test(text);
      };
    }
    case 'Equal':
    case 'Not Equal':
      return equalLeaf(match, kind, cx.where);
  }
}

function equalLeaf(match: MatchExpr, kind: Kind, where: Where): Leaf {
  const raw = match.value ?? '';
  const coerced = <T>(parsed: Parsed<T>): T => {
    if (parsed.ok) return parsed.value;
    const detail = `Failed to coerce value ${goQuote(raw)} for selector ${goQuoteList(match.selector.path)}: ${parsed.error}`;
    throw new FilterError(detail, where(match.valueAt ?? 0), [coercionExpected[kind] ?? kind]);
  };
  switch (kind) {
    case 'int':
    case 'uint': {
      const wanted = coerced(kind === 'int' ? parseGoInt(raw) : parseGoUint(raw));
      return (v) => asInteger(v) === wanted;
    }
    case 'float': {
      const wanted = coerced(parseGoFloat(raw));
      return (v) => asFloat(v) === wanted;
    }
    case 'bool': {
      const wanted = coerced(parseGoBool(raw));
      return (v) => (v === true) === wanted;
    }
    default:
      return (v) => asString(v) === raw;
  }
}

const coercionExpected: Partial<Record<Kind, string>> = {
  int: 'an integer (decimal, or "0x…", "0o…", "0b…" quoted)',
  uint: 'an unsigned integer (decimal, or "0x…", "0o…", "0b…" quoted)',
  float: 'a number',
  bool: 'one of 1 t T TRUE true True 0 f F FALSE false False',
};

// Records are rendered JSON, so a field may be absent (its zero value) or, defensively, of another
// JSON type than the schema says; these readers never throw.

function asString(value: unknown): string {
  if (typeof value === 'string') return value;
  const scalar = typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint';
  return scalar ? String(value) : '';
}

function asList(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Integers may arrive as numbers, bigints, or decimal text (how uint64s are kept exact). */
function asInteger(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : undefined;
  if (typeof value === 'string') return /^-?[0-9]+$/.test(value) ? BigInt(value) : undefined;
  return value === undefined || value === null ? 0n : undefined;
}

function asFloat(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') return Number(value);
  return value === undefined || value === null ? 0 : NaN;
}
