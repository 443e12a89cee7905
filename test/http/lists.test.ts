// Goal: the list rules of http-conventions.md — "Query parameters" (equality filters, sort, fields, count,
// paging with page/perPage and start/limit), "Search expression (parameter q)" (every form, true and false,
// negation) and "Paged list envelope" — checked on the pure module, with no server.
import { describe, expect, test } from 'vitest';
import { applyListQuery, ListQueryError, parseListQuery, type ListQuery } from '../../src/http/lists.ts';

interface Check extends Record<string, unknown> {
  ID: number;
  Node: string;
  CheckID: string;
  Status: string;
  Output: string;
  Critical: boolean;
}

const known = ['ID', 'Node', 'CheckID', 'Status', 'Output', 'Critical'];
const consulReserved = ['index', 'wait', 'filter', 'dc', 'token', 'recurse', 'keys', 'raw', 'separator', 'passing', 'tag', 'stale', 'consistent'];

const records: Check[] = [
  { ID: 1, Node: 'alpha', CheckID: 'serf', Status: 'passing', Output: 'ok', Critical: false },
  { ID: 2, Node: 'beta', CheckID: 'web', Status: 'critical', Output: 'down hard', Critical: true },
  { ID: 3, Node: 'alpha', CheckID: 'web', Status: 'warning', Output: 'slow', Critical: false },
  { ID: 10, Node: 'gamma', CheckID: 'db', Status: 'passing', Output: 'ok', Critical: false },
  { ID: 20, Node: 'beta', CheckID: 'serf', Status: 'passing', Output: '', Critical: false },
];

function parse(query: string, reserved: string[] = consulReserved): ListQuery | undefined {
  return parseListQuery(new URLSearchParams(query), known, reserved);
}

/** The body of applying `query` to `records`, as the plain array or envelope it is. */
function run(query: string, list: Check[] = records): { body: unknown; headers: [string, string][] } {
  const parsed = parse(query);
  if (parsed === undefined) throw new Error(`no list parameters in ${query}`);
  return applyListQuery(list, parsed);
}

function ids(query: string, list: Check[] = records): number[] {
  return (run(query, list).body as Check[]).map((r) => r.ID);
}

function errorOf(query: string): ListQueryError {
  try {
    parse(query);
  } catch (e) {
    expect(e).toBeInstanceOf(ListQueryError);
    return e as ListQueryError;
  }
  throw new Error(`no error for ${query}`);
}

function q(expression: string): string {
  return new URLSearchParams({ q: expression }).toString();
}

describe('no list parameters', () => {
  test('absent list parameters give undefined, so the plain array is kept', () => {
    expect(parse('')).toBeUndefined();
    expect(parse('index=5&wait=1s&dc=dc1&stale')).toBeUndefined();
    expect(parse('Unrelated=x')).toBeUndefined();
  });

  test('a reserved parameter named like a field is not an equality filter', () => {
    expect(parseListQuery(new URLSearchParams('Node=alpha'), known, ['Node'])).toBeUndefined();
  });

  test('a list parameter without paging still answers a plain array', () => {
    const { body, headers } = run('sort=ID');
    expect(Array.isArray(body)).toBe(true);
    expect(headers).toEqual([]);
  });

  test('pretty is parsed for the caller', () => {
    expect(parse('pretty')?.pretty).toBe(true);
    expect(parse('pretty=false')?.pretty).toBe(false);
    expect(parse('sort=ID')?.pretty).toBe(false);
  });
});

describe('equality filters', () => {
  test('a known field filters by string equality', () => {
    expect(ids('Node=alpha')).toEqual([1, 3]);
    expect(ids('Node=alpha&CheckID=web')).toEqual([3]);
    expect(ids('Node=nobody')).toEqual([]);
  });

  test('numbers and booleans compare as their text', () => {
    expect(ids('ID=10')).toEqual([10]);
    expect(ids('ID=10.0')).toEqual([]);
    expect(ids('Critical=true')).toEqual([2]);
  });

  test('the first occurrence of a repeated parameter is used', () => {
    expect(ids('Node=beta&Node=alpha')).toEqual([2, 20]);
  });

  test('names are exact: a differently cased name does not filter', () => {
    expect(parse('node=alpha')).toBeUndefined();
  });
});

describe('q search expression', () => {
  const cases: [string, number[]][] = [
    ['Node:alpha', [1, 3]],
    ['Node:delta', []],
    ['Output:"down hard"', [2]],
    ['Output:"down"', []],
    ['Output:""', [20]],
    ['ID:>3', [10, 20]],
    ['ID:>20', []],
    ['ID:>=10', [10, 20]],
    ['ID:<3', [1, 2]],
    ['ID:<1', []],
    ['ID:<=3', [1, 2, 3]],
    ['ID:2..10', [2, 3, 10]],
    ['ID:4..9', []],
    ['ID:10..*', [10, 20]],
    ['ID:21..*', []],
    ['ID:*..2', [1, 2]],
    ['ID:*..0', []],
    ['Node:b..c', [2, 20]],
    ['Node:>beta', [10]],
    ['Node:al*', [1, 3]],
    ['Node:lp*', []],
    ['Node:*ta', [2, 20]],
    ['Node:*alp', []],
    ['Node:alpha CheckID:web', [3]],
    ['Node:alpha CheckID:db', []],
    ['-Node:alpha', [2, 10, 20]],
    ['-ID:>3', [1, 2, 3]],
    ['-ID:2..10', [1, 20]],
    ['-Output:"down hard"', [1, 3, 10, 20]],
    ['-Status:passing -Node:beta', [3]],
  ];

  test.each(cases)('q=%s', (expression, expected) => {
    expect(ids(q(expression))).toEqual(expected);
  });

  test('comparison is numeric when both sides are numbers, else by code units', () => {
    const list = records.map((r) => ({ ...r, Output: String(r.ID) }));
    expect(ids(q('Output:>9'), list)).toEqual([10, 20]);
    expect(ids(q('Output:>a'), list)).toEqual([]);
    expect(ids(q('Node:<B'), list)).toEqual([]);
  });

  test('a + in the query string is the separating space', () => {
    expect(ids('q=Node:alpha+CheckID:web')).toEqual([3]);
  });

  test('a quoted value is a literal, not a pattern', () => {
    const list = [...records, { ID: 30, Node: 'al*', CheckID: 'x', Status: 'passing', Output: '1..2', Critical: false }];
    expect(ids(q('Node:"al*"'), list)).toEqual([30]);
    expect(ids(q('Output:"1..2"'), list)).toEqual([30]);
  });

  test('negated prefix or suffix is unsupported', () => {
    expect(errorOf(q('-Node:al*'))).toMatchObject({ field: 'q', rule: 'Unsupported' });
    expect(errorOf(q('-Node:*ta'))).toMatchObject({ field: 'q', rule: 'Unsupported' });
  });

  test('an unknown field is rejected', () => {
    expect(errorOf(q('Color:red'))).toMatchObject({ field: 'q', rule: 'Unknown' });
  });

  test.each(['foo', ':bar', 'Node:"unterminated', 'Node:', 'Node :alpha', 'Node:*..*', 'Node:..b', 'Node:*al*', 'Node:*', 'Node:a"b'])(
    'malformed q=%s is rejected',
    (expression) => {
      const error = errorOf(q(expression));
      expect(error.field).toBe('q');
      expect(['Format', 'Unknown']).toContain(error.rule);
    },
  );

  test('malformed forms of the brief carry the Format rule', () => {
    expect(errorOf(q('foo')).rule).toBe('Format');
    expect(errorOf(q(':bar')).rule).toBe('Format');
    expect(errorOf(q('foo:"unterminated')).rule).toBe('Format');
  });
});

describe('sort', () => {
  test('ascending and descending on one key; numbers numerically', () => {
    expect(ids('sort=ID')).toEqual([1, 2, 3, 10, 20]);
    expect(ids('sort=-ID')).toEqual([20, 10, 3, 2, 1]);
  });

  test('strings by code units', () => {
    const list = records.map((r, i) => ({ ...r, Node: ['b', 'B', 'a', 'A', 'é'][i] ?? '' }));
    expect(ids('sort=Node', list)).toEqual([10, 2, 3, 1, 20]);
  });

  test('multiple keys, mixed directions', () => {
    expect(ids('sort=Node,-ID')).toEqual([3, 1, 20, 2, 10]);
    expect(ids('sort=-Status,ID')).toEqual([3, 1, 10, 20, 2]);
  });

  test('stable: ties keep input order in either direction', () => {
    expect(ids('sort=Status')).toEqual([2, 1, 10, 20, 3]);
    expect(ids('sort=-Status')).toEqual([3, 1, 10, 20, 2]);
  });

  test('an unknown field or an empty rule is rejected', () => {
    expect(errorOf('sort=Color')).toMatchObject({ field: 'sort', rule: 'Unknown' });
    expect(errorOf('sort=-Color')).toMatchObject({ field: 'sort', rule: 'Unknown' });
    expect(errorOf('sort=ID,,Node')).toMatchObject({ field: 'sort', rule: 'Format' });
  });

  test('the input array is left as it was', () => {
    const copy = [...records];
    run('sort=-ID', copy);
    expect(copy).toEqual(records);
  });
});

describe('fields', () => {
  test('projects the listed top-level fields', () => {
    expect(run('fields=Node,ID&ID=1').body).toEqual([{ Node: 'alpha', ID: 1 }]);
  });

  test('projects inside the envelope too', () => {
    const body = run('fields=ID&perPage=2').body as { records: unknown[] };
    expect(body.records).toEqual([{ ID: 1 }, { ID: 2 }]);
  });

  test('an absent key stays absent', () => {
    const list = [{ ID: 1 } as unknown as Check];
    expect(run('fields=ID,Node', list).body).toEqual([{ ID: 1 }]);
  });

  test('an unknown field is rejected', () => {
    expect(errorOf('fields=ID,Color')).toMatchObject({ field: 'fields', rule: 'Unknown' });
  });
});

describe('count', () => {
  test('Total-Count is the number after filtering, before paging', () => {
    const { body, headers } = run('count=true&Status=passing&perPage=1');
    expect(headers).toEqual([['Total-Count', '3']]);
    expect((body as { records: unknown[] }).records).toHaveLength(1);
  });

  test('no header unless count is true', () => {
    expect(run('Status=passing').headers).toEqual([]);
    expect(run('count=false&Status=passing').headers).toEqual([]);
  });
});

interface Envelope {
  records: Check[];
  page: number;
  pageSize: number;
  totalRecords: number;
  totalPages: number;
  nextPage: number | null;
  prevPage: number | null;
}

describe('paging', () => {
  const many: Check[] = Array.from({ length: 23 }, (_, i) => ({
    ID: i + 1,
    Node: `n${i}`,
    CheckID: 'c',
    Status: 'passing',
    Output: '',
    Critical: false,
  }));

  const envelope = (query: string, list: Check[] = many): Envelope => run(query, list).body as Envelope;

  test('page/perPage pages concatenate to the full list', () => {
    const seen: number[] = [];
    for (let page = 1; page <= 5; page++) seen.push(...envelope(`page=${page}&perPage=5`).records.map((r) => r.ID));
    expect(seen).toEqual(many.map((r) => r.ID));
  });

  test('page/perPage envelope totals and edges', () => {
    expect(envelope('page=1&perPage=5')).toMatchObject({ page: 1, pageSize: 5, totalRecords: 23, totalPages: 5, nextPage: 2, prevPage: null });
    expect(envelope('page=3&perPage=5')).toMatchObject({ page: 3, nextPage: 4, prevPage: 2 });
    const last = envelope('page=5&perPage=5');
    expect(last).toMatchObject({ page: 5, nextPage: null, prevPage: 4 });
    expect(last.records.map((r) => r.ID)).toEqual([21, 22, 23]);
    const beyond = envelope('page=9&perPage=5');
    expect(beyond).toMatchObject({ records: [], nextPage: null, prevPage: 5 });
  });

  test('defaults: page 1, perPage 10', () => {
    expect(envelope('page=2')).toMatchObject({ page: 2, pageSize: 10, totalPages: 3, nextPage: 3, prevPage: 1 });
    expect(envelope('perPage=20')).toMatchObject({ page: 1, pageSize: 20, totalPages: 2, nextPage: 2, prevPage: null });
  });

  test('an empty list is one envelope with no pages', () => {
    expect(envelope('page=1&perPage=5', [])).toEqual({
      records: [],
      page: 1,
      pageSize: 5,
      totalRecords: 0,
      totalPages: 0,
      nextPage: null,
      prevPage: null,
    });
  });

  test('start/limit pages concatenate to the full list', () => {
    const seen: number[] = [];
    for (let start = 1; start <= 23; start += 4) seen.push(...envelope(`start=${start}&limit=4`).records.map((r) => r.ID));
    expect(seen).toEqual(many.map((r) => r.ID));
  });

  test('start/limit envelope: page = floor((start-1)/limit)+1, totals and edges', () => {
    expect(envelope('start=1&limit=4')).toMatchObject({ page: 1, pageSize: 4, totalRecords: 23, totalPages: 6, nextPage: 2, prevPage: null });
    expect(envelope('start=9&limit=4')).toMatchObject({ page: 3, nextPage: 4, prevPage: 2 });
    const last = envelope('start=21&limit=4');
    expect(last).toMatchObject({ page: 6, nextPage: null, prevPage: 5 });
    expect(last.records.map((r) => r.ID)).toEqual([21, 22, 23]);
    expect(envelope('start=3&limit=4').records.map((r) => r.ID)).toEqual([3, 4, 5, 6]);
    expect(envelope('limit=4').page).toBe(1);
  });

  test('paging applies after filter and sort', () => {
    const body = envelope('sort=-ID&perPage=3&page=2&q=ID:>10');
    expect(body.records.map((r) => r.ID)).toEqual([20, 19, 18]);
    expect(body).toMatchObject({ totalRecords: 13, totalPages: 5 });
  });

  test.each([
    ['perPage=101', 'perPage', 'Range'],
    ['limit=101', 'limit', 'Range'],
    ['perPage=0', 'perPage', 'Format'],
    ['page=0', 'page', 'Format'],
    ['page=-1', 'page', 'Format'],
    ['page=1.5', 'page', 'Format'],
    ['start=abc', 'start', 'Format'],
    ['limit=', 'limit', 'Format'],
    ['page=99999999999999999999', 'page', 'Format'],
    ['page=1&start=1', 'start', 'Conflict'],
  ])('%s is rejected', (query, field, rule) => {
    expect(errorOf(query)).toMatchObject({ field, rule });
  });

  test('perPage 100 is the largest accepted', () => {
    expect(envelope('perPage=100').records).toHaveLength(23);
  });
});
