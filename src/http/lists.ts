/**
 * List rules of http-conventions.md ("Query parameters", "Search expression (parameter q)", "Paged list
 * envelope"): equality filters, `q`, `sort`, paging, `fields`, `count` and `pretty`. Pure and
 * self-contained: it knows nothing of uWS or the error catalogue, so a route parses with
 * `parseListQuery`, maps a `ListQueryError` to its 1009 body (`field` and `rule` give the
 * `<Rule>:<text>` detail, `message` the text), and renders with `applyListQuery`.
 *
 * A list request with no list parameter at all gets `undefined`, so the route keeps answering the plain
 * array Consul clients expect.
 */

/** Records per page when `page` is given without `perPage` (and `limit` when `start` comes alone). @default 10 */
export const perPageDefault = 10;
/** Largest `perPage` / `limit`, the spec's recommended range being [1,100]. */
export const perPageMax = 100;

/** The parameters the list rules own; none of them is ever an equality filter. */
export const listParameters = ['page', 'perPage', 'start', 'limit', 'fields', 'sort', 'count', 'q', 'pretty'] as const;

export interface SortKey {
  field: string;
  desc: boolean;
}

/** One condition of `q`; all conditions of a `q` must hold. */
export type Condition =
  | { kind: 'eq'; field: string; value: string; negate: boolean }
  | { kind: 'cmp'; field: string; op: '>' | '>=' | '<' | '<='; value: string; negate: boolean }
  /** Inclusive; an undefined bound is the `*` side. */
  | { kind: 'range'; field: string; low: string | undefined; high: string | undefined; negate: boolean }
  | { kind: 'prefix'; field: string; value: string }
  | { kind: 'suffix'; field: string; value: string };

export interface ListQuery {
  /** Set together with `perPage` when either was given. */
  page?: number;
  perPage?: number;
  /** 1-based index of the first record; set together with `limit` when either was given. */
  start?: number;
  limit?: number;
  sort: SortKey[];
  /** Top-level fields to return, in this order; undefined returns whole records. */
  fields?: string[];
  /** Field name → the text its value must equal. */
  equals: Record<string, string>;
  q: Condition[];
  /** Put the filtered total in a Total-Count header. */
  count: boolean;
  /** The caller pretty-prints the JSON (the spec leaves it to the gateway). */
  pretty: boolean;
}

/** An invalid list parameter: `field` is the parameter, `rule` one of Format, Range, Unknown, Unsupported, Conflict. */
export class ListQueryError extends Error {
  readonly field: string;
  readonly rule: string;
  constructor(field: string, rule: string, message: string) {
    super(message);
    this.name = 'ListQueryError';
    this.field = field;
    this.rule = rule;
  }
}

/**
 * Parses list parameters. `known` are the record's top-level field names; a query parameter with
 * exactly such a name, not in `listParameters` nor `reserved`, filters by equality. Repeated parameters:
 * the first occurrence is used, as the spec recommends.
 */
export function parseListQuery(params: URLSearchParams, known: string[], reserved: string[] = []): ListQuery | undefined {
  const knownSet = new Set(known);
  const ownedSet = new Set<string>([...listParameters, ...reserved]);
  const equals = equalityFilters(params, knownSet, ownedSet);
  const present = listParameters.some((name) => params.has(name));
  if (!present && Object.keys(equals).length === 0) return undefined;

  const query: ListQuery = {
    sort: params.has('sort') ? parseSort(params.get('sort') ?? '', knownSet) : [],
    equals,
    q: params.has('q') ? parseSearch(params.get('q') ?? '', knownSet) : [],
    count: flagValue(params, 'count'),
    pretty: flagValue(params, 'pretty'),
  };
  Object.assign(query, parsePaging(params));
  if (params.has('fields')) query.fields = parseFields(params.get('fields') ?? '', knownSet);
  return query;
}

/** Filter (equality, then q) → sort → paging → fields. */
export function applyListQuery<T extends Record<string, unknown>>(
  records: T[],
  query: ListQuery,
): { body: unknown; headers: [string, string][] } {
  const kept = records.filter((record) => matchesEquals(record, query.equals) && query.q.every((c) => matches(record, c)));
  const sorted = query.sort.length > 0 ? sortRecords(kept, query.sort) : kept;
  const headers: [string, string][] = query.count ? [['Total-Count', String(sorted.length)]] : [];
  const project = (list: T[]): unknown[] => (query.fields ? list.map((r) => projectRecord(r, query.fields ?? [])) : list);

  const window = pageWindow(query);
  if (window === undefined) return { body: project(sorted), headers };
  const { first, size, page } = window;
  const totalPages = Math.ceil(sorted.length / size);
  const body = {
    records: project(sorted.slice(first, first + size)),
    page,
    pageSize: size,
    totalRecords: sorted.length,
    totalPages,
    nextPage: page < totalPages ? page + 1 : null,
    // Past the end, the previous page is the last one that has records.
    prevPage: page > 1 && totalPages > 0 ? Math.min(page - 1, totalPages) : null,
  };
  return { body, headers };
}

// ---------------------------------------------------------------------------------------------------
// Parsing

function equalityFilters(params: URLSearchParams, known: Set<string>, owned: Set<string>): Record<string, string> {
  const equals = new Map<string, string>();
  for (const [name, value] of params) {
    if (known.has(name) && !owned.has(name) && !equals.has(name)) equals.set(name, value);
  }
  return Object.fromEntries(equals);
}

/** Presence means true, except an explicit `false` or `0`. */
function flagValue(params: URLSearchParams, name: string): boolean {
  if (!params.has(name)) return false;
  const text = params.get(name) ?? '';
  return text !== 'false' && text !== '0';
}

const positiveIntegerPattern = /^[1-9]\d*$/;

function positiveInteger(params: URLSearchParams, name: string): number | undefined {
  if (!params.has(name)) return undefined;
  const text = params.get(name) ?? '';
  const n = Number(text);
  if (!positiveIntegerPattern.test(text) || !Number.isSafeInteger(n)) {
    throw new ListQueryError(name, 'Format', `${name} must be a positive integer, got "${text}"`);
  }
  return n;
}

function pageSize(params: URLSearchParams, name: string): number | undefined {
  const n = positiveInteger(params, name);
  if (n !== undefined && n > perPageMax) {
    throw new ListQueryError(name, 'Range', `${name} must be between 1 and ${perPageMax}, got ${n}`);
  }
  return n;
}

type Paging = Pick<ListQuery, 'page' | 'perPage' | 'start' | 'limit'>;

function parsePaging(params: URLSearchParams): Paging {
  const page = positiveInteger(params, 'page');
  const perPage = pageSize(params, 'perPage');
  const start = positiveInteger(params, 'start');
  const limit = pageSize(params, 'limit');
  const byPage = page !== undefined || perPage !== undefined;
  const byStart = start !== undefined || limit !== undefined;
  // Two windows at once have no single answer; saying so beats silently preferring one.
  if (byPage && byStart) {
    throw new ListQueryError('start', 'Conflict', 'page/perPage and start/limit cannot be combined');
  }
  if (byPage) return { page: page ?? 1, perPage: perPage ?? perPageDefault };
  if (byStart) return { start: start ?? 1, limit: limit ?? perPageDefault };
  return {};
}

function splitList(param: string, text: string): string[] {
  const items = text.split(',');
  if (items.some((item) => item === '')) {
    throw new ListQueryError(param, 'Format', `${param} has an empty entry in "${text}"`);
  }
  return items;
}

function requireKnown(param: string, name: string, known: Set<string>): void {
  if (!known.has(name)) throw new ListQueryError(param, 'Unknown', `unknown field "${name}" in ${param}`);
}

/** The spec lets an invalid sort rule be rejected or dropped; rejecting tells the caller. */
function parseSort(text: string, known: Set<string>): SortKey[] {
  return splitList('sort', text).map((item) => {
    const desc = item.startsWith('-');
    const field = desc ? item.slice(1) : item;
    requireKnown('sort', field, known);
    return { field, desc };
  });
}

function parseFields(text: string, known: Set<string>): string[] {
  const fields = splitList('fields', text);
  for (const field of fields) requireKnown('fields', field, known);
  return [...new Set(fields)];
}

/** Splits `q` at spaces outside double quotes. */
function searchTokens(text: string): string[] {
  const tokens: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    if (ch === ' ' && !quoted) {
      if (current !== '') tokens.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  if (quoted) throw new ListQueryError('q', 'Format', `unterminated quote in "${text}"`);
  if (current !== '') tokens.push(current);
  return tokens;
}

function parseSearch(text: string, known: Set<string>): Condition[] {
  return searchTokens(text).map((token) => parseCondition(token, known));
}

const conditionPattern = /^(-?)([^:"\s]+):(.*)$/s;
const comparisonPattern = /^(>=|<=|>|<)(.+)$/s;
const quotedPattern = /^"([^"]*)"$/;

/**
 * One `q` condition. Decision: the spec gives `foo:bar` both as "equals" and as "contains"; the two
 * cannot share one form, so `foo:bar` means equality (the first and exact reading, and the one an index
 * can serve). Contains is not offered. A quoted value is always a literal for equality, so
 * `foo:"a*"` matches the text `a*`. Negation applies to equality, comparison and range; the spec leaves
 * negated prefix and suffix unsupported, so they are rejected.
 */
function parseCondition(token: string, known: Set<string>): Condition {
  const m = conditionPattern.exec(token);
  if (!m) throw new ListQueryError('q', 'Format', `"${token}" is not a name:value condition`);
  const negate = m[1] === '-';
  const field = m[2] ?? '';
  const rest = m[3] ?? '';
  requireKnown('q', field, known);
  const malformed = (): never => {
    throw new ListQueryError('q', 'Format', `malformed value in "${token}"`);
  };
  if (rest === '') return malformed();

  const quoted = quotedPattern.exec(rest);
  if (quoted) return { kind: 'eq', field, value: quoted[1] ?? '', negate };
  if (rest.includes('"')) return malformed();

  const cmp = comparisonPattern.exec(rest);
  if (cmp) return { kind: 'cmp', field, op: cmp[1] as '>' | '>=' | '<' | '<=', value: cmp[2] ?? '', negate };

  const dots = rest.indexOf('..');
  if (dots >= 0) {
    const low = rest.slice(0, dots);
    const high = rest.slice(dots + 2);
    if (low === '' || high === '' || (low === '*' && high === '*')) return malformed();
    return { kind: 'range', field, low: low === '*' ? undefined : low, high: high === '*' ? undefined : high, negate };
  }

  const starts = rest.startsWith('*');
  const ends = rest.endsWith('*');
  if (starts || ends) {
    // `*`, `**` and `*bar*` (a contains) are no form of the grammar.
    if ((starts && ends) || rest.length < 2) return malformed();
    if (negate) {
      throw new ListQueryError('q', 'Unsupported', `negating a prefix or suffix condition is unsupported: "${token}"`);
    }
    return ends ? { kind: 'prefix', field, value: rest.slice(0, -1) } : { kind: 'suffix', field, value: rest.slice(1) };
  }
  return { kind: 'eq', field, value: rest, negate };
}

// ---------------------------------------------------------------------------------------------------
// Applying

/**
 * The text a value is compared as: strings as they are, numbers and booleans as their JSON text.
 * Missing, null, objects and arrays have no text, so no condition on them holds (a negated one does).
 */
function fieldText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return undefined;
}

function matchesEquals(record: Record<string, unknown>, equals: Record<string, string>): boolean {
  for (const [field, value] of Object.entries(equals)) {
    if (fieldText(record[field]) !== value) return false;
  }
  return true;
}

const numericPattern = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Numeric order when both texts are numbers, else code-unit order. */
function compareText(a: string, b: string): number {
  if (numericPattern.test(a) && numericPattern.test(b)) return Math.sign(Number(a) - Number(b));
  return a < b ? -1 : a > b ? 1 : 0;
}

function holds(text: string, c: Condition): boolean {
  switch (c.kind) {
    case 'eq':
      return text === c.value;
    case 'cmp': {
      const order = compareText(text, c.value);
      if (c.op === '>') return order > 0;
      if (c.op === '>=') return order >= 0;
      if (c.op === '<') return order < 0;
      return order <= 0;
    }
    case 'range':
      return (c.low === undefined || compareText(text, c.low) >= 0) && (c.high === undefined || compareText(text, c.high) <= 0);
    case 'prefix':
      return text.startsWith(c.value);
    case 'suffix':
      return text.endsWith(c.value);
  }
}

function matches(record: Record<string, unknown>, c: Condition): boolean {
  const text = fieldText(record[c.field]);
  const result = text !== undefined && holds(text, c);
  return 'negate' in c && c.negate ? !result : result;
}

/** Rank of a value's type in sort order: missing and null first, then booleans, numbers, strings, the rest. */
function typeRank(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'boolean') return 1;
  if (typeof value === 'number' || typeof value === 'bigint') return 2;
  if (typeof value === 'string') return 3;
  return 4;
}

function compareValues(a: unknown, b: unknown): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return rank;
  if (typeof a === 'number' || typeof a === 'bigint') return a < (b as number) ? -1 : a > (b as number) ? 1 : 0;
  if (typeof a === 'string' || typeof a === 'boolean') return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0;
  return 0;
}

/** Stable: records equal on every key keep their input order, in either direction. */
function sortRecords<T extends Record<string, unknown>>(records: T[], keys: SortKey[]): T[] {
  const indexed = records.map((record, index) => ({ record, index }));
  indexed.sort((x, y) => {
    for (const { field, desc } of keys) {
      const order = compareValues(x.record[field], y.record[field]);
      if (order !== 0) return desc ? -order : order;
    }
    return x.index - y.index;
  });
  return indexed.map((entry) => entry.record);
}

function projectRecord(record: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  // An absent key stays absent rather than being invented as null.
  return Object.fromEntries(fields.filter((field) => Object.hasOwn(record, field)).map((field) => [field, record[field]]));
}

/** The slice to return and the page it is, or undefined when no paging was asked for. */
function pageWindow(query: ListQuery): { first: number; size: number; page: number } | undefined {
  if (query.page !== undefined || query.perPage !== undefined) {
    const page = query.page ?? 1;
    const size = query.perPage ?? perPageDefault;
    return { first: (page - 1) * size, size, page };
  }
  if (query.start !== undefined || query.limit !== undefined) {
    const start = query.start ?? 1;
    const size = query.limit ?? perPageDefault;
    return { first: start - 1, size, page: Math.floor((start - 1) / size) + 1 };
  }
  return undefined;
}
