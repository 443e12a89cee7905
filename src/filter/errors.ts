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
