/**
 * `?filter=` on list endpoints: compiled once per request against the endpoint's schema, then tried on the
 * list's records in slices of bounded work (`filterSliceWork`), the request giving the event loop a turn
 * between slices; records rendered only to be filtered are rendered in the same slices. A filter of many
 * clauses over thousands of records takes a while, and other clients are answered meanwhile, not after it.
 * A request whose client went away stops trying: its answer is never sent. The items handed over are taken
 * from the state before the first slice; the state's records are replaced, never changed, on a write, so
 * rendering them later renders them as they were then.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { RegistryError } from '../domain/errors.ts';
import { compileFilter, FilterError, type FilterPredicate, type FilterWork, type Schema } from '../filter/index.ts';
import { param, type Request } from './request.ts';

/**
 * Units of filter work (FilterWork: a clause tried, a list element or character it looked at) one slice
 * does before the request gives the event loop a turn: well under a millisecond here.
 */
export const filterSliceWork = 20_000;
/** What trying one record costs besides its clauses: rendering it (as many units as that takes) and keeping it. */
const recordWork = 64;

/** A request's `?filter`, to try on the records of its list. */
export interface ListFilter {
  /** False without `?filter` (or with an empty one): every item is kept. */
  readonly given: boolean;
  /** The `items` whose record the filter keeps, in their order (with what was kept so far once the client went away). */
  keep<T>(items: readonly T[], recordOf: (item: T) => unknown): Promise<T[]>;
  /** The records of `items` the filter keeps, each rendered once, in their order (as `keep`). */
  records<T, R>(items: readonly T[], render: (item: T) => R): Promise<R[]>;
}

/** No filter: every item is kept. */
export const everyItem: ListFilter = { given: false, keep: async (items) => [...items], records: async (items, render) => items.map(render) };

/** Keeps nothing and tries nothing: a read that only validates its request (its answer is not sent). */
export const noItem: ListFilter = { given: true, keep: async () => [], records: async () => [] };

/** Compiles `?filter` against the endpoint's schema; a bad expression is 400/1009 (consul: 500). */
export function filterOf(req: Request, schema: Schema): ListFilter {
  const expression = param(req, 'filter');
  if (expression === undefined || expression.trim() === '') return everyItem;
  const work: FilterWork = { units: 0 };
  let test: FilterPredicate;
  try {
    test = compileFilter(expression, schema, work);
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    throw new RegistryError('filterInvalid', { why: err.message });
  }
  const tried = { test, work, req };
  return {
    given: true,
    keep: (items, recordOf) => sliced(items, recordOf, (item) => item, tried),
    records: (items, render) => sliced(items, render, (_item, record) => record, tried),
  };
}

/** What is kept of each item that passes: the item or its record. */
async function sliced<T, R, K>(items: readonly T[], recordOf: (item: T) => R, kept: (item: T, record: R) => K,
  tried: { test: FilterPredicate; work: FilterWork; req: Request }): Promise<K[]> {
  const { test, work, req } = tried;
  const out: K[] = [];
  let i = 0;
  for (;;) {
    work.units = 0;
    for (; i < items.length && work.units < filterSliceWork; i++) {
      work.units += recordWork;
      const item = items[i] as T;
      const record = recordOf(item);
      if (test(record)) out.push(kept(item, record));
    }
    if (i >= items.length) return out;
    await nextTurn();
    if (req.signal.aborted) return out;
  }
}
