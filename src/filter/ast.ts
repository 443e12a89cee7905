/** The tree a parsed ?filter= expression becomes (parse.ts builds it, compile.ts turns it into a predicate). */

/** bexpr's MatchOperator names; `contains` parses to In and `not contains` to Not In. */
export type MatchOp = 'Equal' | 'Not Equal' | 'In' | 'Not In' | 'Is Empty' | 'Is Not Empty' | 'Matches' | 'Not Matches';

export interface Selector {
  path: string[];
  /** Cursor position of each path element, to point errors at the element that is wrong. */
  at: number[];
}

export interface MatchExpr {
  kind: 'match';
  selector: Selector;
  op: MatchOp;
  /** Literal text of the value (bare words, numbers and unquoted strings alike); absent for is (not) empty. */
  value?: string;
  valueAt?: number;
}

export type Expr =
  | { kind: 'or' | 'and'; left: Expr; right: Expr }
  | { kind: 'not'; operand: Expr }
  | MatchExpr;
