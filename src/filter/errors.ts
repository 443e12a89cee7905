/**
 * Where a filter error points, as bexpr prints it ("1:4 (3)"): line and column count characters
 * (pigeon's convention, where a newline itself sits at column 0 of the next line), offset counts
 * UTF-8 bytes of the expression.
 */
export interface FilterPosition {
  line: number;
  column: number;
  offset: number;
}

/** What Consul puts in front of every compile-time filter error. */
export const evaluatorPrefix = 'Failed to create boolean expression evaluator: ';

/**
 * A filter that does not compile. `message` is Consul's text (the HTTP layer answers it with 500);
 * `detail` is bexpr's own text without Consul's prefix; `position` and `expected` say where it went
 * wrong and what would have been accepted there.
 */
export class FilterError extends Error {
  override readonly name = 'FilterError';
  readonly detail: string;

  constructor(
    detail: string,
    readonly position?: FilterPosition,
    readonly expected?: readonly string[],
  ) {
    super(evaluatorPrefix + detail);
    this.detail = detail;
  }
}

/**
 * Match clauses (`Selector op value`) one filter may hold, so that no filter costs much to parse or to try
 * on every record of a list; real filters hold a handful (bexpr has no limit). Parsing stops past it.
 */
export const filterClausesMax = 128;

/** A filter past `filterClausesMax`, at the first clause past it. */
export function tooManyClauses(at: FilterPosition): FilterError {
  const detail = `${at.line}:${at.column} (${at.offset}): expression too large: a filter may hold at most ${filterClausesMax} match clauses`;
  return new FilterError(detail, at, [`at most ${filterClausesMax} match clauses`]);
}
