/**
 * The ?filter= grammar of go-bexpr v0.1.2 (spec consul-compat.md §5), one method per rule of bexpr's
 * grammar and in its order of alternatives. The order matters beyond the language accepted: bexpr's
 * errors are "what was wanted at the farthest failure", so trying the same terminals in the same order
 * is what makes our messages equal to Consul's. Rules quoted in comments are bexpr's own rule text.
 */
import { filterClausesMax, FilterError, tooManyClauses } from './errors.ts';
import { goQuote, goUnquote } from './go-strconv.ts';
import type { Expr, MatchExpr, MatchOp, Selector } from './ast.ts';
import { Peg } from './peg.ts';

export interface ParsedFilter {
  expr: Expr;
  position: Peg['position'];
}

/**
 * Parentheses and `not`s that may enclose one another before the parser gives up, so that a hostile
 * filter cannot exhaust the stack (bexpr has no such limit; real filters nest a few levels).
 */
export const nestingDepthMax = 64;

const ws = '[ \\t\\r\\n]';
const isSpace = (ch: string): boolean => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
const isLetter = (ch: string): boolean => /^[a-zA-Z]$/.test(ch);
const isWordChar = (ch: string): boolean => /^[a-zA-Z0-9_]$/.test(ch);
const isDigit = (ch: string): boolean => ch >= '0' && ch <= '9';
const isNonZeroDigit = (ch: string): boolean => ch >= '1' && ch <= '9';

/** Parses a filter expression; throws FilterError with bexpr's parse error text. */
export function parseFilter(expression: string): ParsedFilter {
  const peg = new Peg(expression);
  const expr = new Grammar(peg).input();
  const [first, ...others] = peg.issues;
  if (first) {
    const texts = [first, ...others].map((i) => `${where(peg, i.at)}: rule ${i.rule}: ${i.message}`);
    throw new FilterError(texts.join('\n'), peg.position(first.at), first.expected);
  }
  if (expr === undefined) {
    const { at, expected } = peg.farthestFailure();
    throw new FilterError(`${where(peg, at)}: no match found, expected: ${listJoin(expected)}`, peg.position(at), expected);
  }
  return { expr, position: (at) => peg.position(at) };
}

function where(peg: Peg, at: number): string {
  const { line, column, offset } = peg.position(at);
  return `${line}:${column} (${offset})`;
}

/** pigeon's listJoin: "a, b or c". */
function listJoin(items: readonly string[]): string {
  if (items.length < 2) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

class TooDeep extends Error {}
class TooManyClauses extends Error {}
class Grammar {
  private readonly memo = new Map<string, { end: number; expr: Expr | undefined }>();
  private depth = 0;
  /** Where each match clause parsed so far begins (one parsed again counts once). */
  private readonly clauses = new Set<number>();

  constructor(private readonly p: Peg) {}

  /** Input <- _? "(" _? OrExpression _? ")" _? EOF / _? OrExpression _? EOF */
  input(): Expr | undefined {
    try {
      return this.parenthesizedInput() ?? this.p.take(() => this.endsHere(this.optWs() && this.or()));
    } catch (error) {
      if (error instanceof TooManyClauses) throw tooManyClauses(this.p.position(this.p.pos));
      if (!(error instanceof TooDeep)) throw error;
      const at = this.p.pos;
      const detail = `${where(this.p, at)}: expression nested too deeply (limit ${nestingDepthMax})`;
      throw new FilterError(detail, this.p.position(at), [`at most ${nestingDepthMax} nested "(" and "not"`]);
    }
  }

  private parenthesizedInput(): Expr | undefined {
    return this.p.take(() => {
      this.optWs();
      if (!this.p.lit('(')) return undefined;
      this.optWs();
      const expr = this.or();
      return expr && this.optWs() && this.p.lit(')') ? this.endsHere(expr) : undefined;
    });
  }

  /** `_? EOF` after an expression. */
  private endsHere(expr: Expr | undefined): Expr | undefined {
    return expr && this.optWs() && this.eof() ? expr : undefined;
  }

  /** OrExpression <- AndExpression _ "or" _ OrExpression / AndExpression */
  private or(): Expr | undefined {
    return this.memoized('or', () => this.chain('or', () => this.and()));
  }

  /** AndExpression <- NotExpression _ "and" _ AndExpression / NotExpression */
  private and(): Expr | undefined {
    return this.memoized('and', () => this.chain('and', () => this.not()));
  }

  /**
   * The right-recursive rule above as a loop, so a long chain does not deepen the stack. It tries the
   * same terminals in the same order; where the recursive rule falls back to its second alternative it
   * only replays memoized operands, which records nothing new. The tree stays right-nested.
   */
  private chain(kind: 'or' | 'and', operand: () => Expr | undefined): Expr | undefined {
    const first = operand();
    if (!first) return undefined;
    const operands = [first];
    for (;;) {
      const next = this.p.take(() => (this.ws() && this.p.lit(kind) && this.ws() ? operand() : undefined));
      if (!next) break;
      operands.push(next);
    }
    return operands.reduceRight((right, left) => ({ kind, left, right }));
  }

  /** NotExpression <- "not" _ NotExpression / ParenthesizedExpression; `not not x` is x. */
  private not(): Expr | undefined {
    return this.memoized('not', () => this.nested(() => {
      const negated = this.p.take(() => (this.p.lit('not') && this.ws() ? this.not() : undefined));
      if (negated) return negated.kind === 'not' ? negated.operand : { kind: 'not', operand: negated };
      return this.grouping();
    }));
  }

  /** Every parenthesis and every `not` passes here: the only rules that still nest on the stack. */
  private nested<T>(parse: () => T): T {
    if (++this.depth > nestingDepthMax) throw new TooDeep();
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  /** ParenthesizedExpression "grouping" <- "(" _? Or _? ")" / MatchExpression / "(" _? Or _? !")" &{error} */
  private grouping(): Expr | undefined {
    const open = (): Expr | undefined => (this.p.lit('(') && this.optWs() ? this.or() : undefined);
    return (
      this.p.take(() => {
        const expr = open();
        return expr && this.optWs() && this.p.lit(')') ? expr : undefined;
      }) ??
      this.match() ??
      this.p.take(() => {
        if (open() && this.optWs() && this.p.not(() => this.p.lit(')'))) {
          this.p.issue('"grouping"', 'Unmatched parentheses', ['")"']);
        }
        return undefined;
      })
    );
  }

  /** MatchExpression "match" <- MatchSelectorOpValue / MatchSelectorOp / MatchValueOpSelector */
  private match(): MatchExpr | undefined {
    const at = this.p.pos;
    const match = this.selectorOpValue() ?? this.selectorOp() ?? this.valueOpSelector();
    if (match !== undefined && this.clauses.add(at).size > filterClausesMax) {
      this.p.pos = at;
      throw new TooManyClauses();
    }
    return match;
  }

  /** Selector (== / != / contains / not contains / matches / not matches) Value */
  private selectorOpValue(): MatchExpr | undefined {
    return this.p.take(() => {
      const selector = this.selector();
      const op = selector && this.valueOperator();
      const valueAt = this.p.pos;
      const value = op && this.value();
      return value === undefined || !selector || !op ? undefined : { kind: 'match', selector, op, value, valueAt };
    });
  }

  private valueOperator(): MatchOp | undefined {
    return (
      this.symbol('Equal', '==') ??
      this.symbol('Not Equal', '!=') ??
      this.keywords('In', ['contains'], true) ??
      this.keywords('Not In', ['not', 'contains'], true) ??
      this.keywords('Matches', ['matches'], true) ??
      this.keywords('Not Matches', ['not', 'matches'], true)
    );
  }

  /** Selector (is empty / is not empty) */
  private selectorOp(): MatchExpr | undefined {
    return this.p.take(() => {
      const selector = this.selector();
      const op = selector && this.emptinessOperator();
      return selector && op && { kind: 'match', selector, op };
    });
  }

  private emptinessOperator(): MatchOp | undefined {
    return this.keywords('Is Empty', ['is', 'empty'], false) ?? this.keywords('Is Not Empty', ['is', 'not', 'empty'], false);
  }

  /** MatchValueOpSelector "match" <- Value (in / not in) Selector / Value (in / not in) !Selector &{error} */
  private valueOpSelector(): MatchExpr | undefined {
    const valueAndOp = (): { value: string; valueAt: number; op: MatchOp } | undefined => {
      const valueAt = this.p.pos;
      const value = this.value();
      const op = value === undefined ? undefined : this.inOperator();
      return value === undefined || !op ? undefined : { value, valueAt, op };
    };
    return (
      this.p.take(() => {
        const head = valueAndOp();
        const selector = head && this.selector();
        return head && selector && { kind: 'match', selector, ...head };
      }) ??
      this.p.take(() => {
        if (valueAndOp() && this.p.not(() => this.selector())) this.p.issue('"match"', 'Invalid selector', ['[a-zA-Z]']);
        return undefined;
      })
    );
  }

  private inOperator(): MatchOp | undefined {
    return this.keywords('In', ['in'], true) ?? this.keywords('Not In', ['not', 'in'], true);
  }

  /** MatchEqual <- _? "==" _? (likewise !=): the only operators that need no surrounding space. */
  private symbol(op: MatchOp, text: string): MatchOp | undefined {
    return this.p.seq(() => this.optWs() && this.p.lit(text) && this.optWs()) ? op : undefined;
  }

  /** Keyword operators: each word preceded by `_`, and (for those taking a value after) one after. */
  private keywords(op: MatchOp, words: string[], spaceAfter: boolean): MatchOp | undefined {
    const matched = this.p.seq(() => words.every((word) => this.ws() && this.p.lit(word)) && (!spaceAfter || this.ws()));
    return matched ? op : undefined;
  }

  /** Selector "selector" <- Identifier SelectorOrIndex* */
  private selector(): Selector | undefined {
    return this.p.take(() => {
      const at = [this.p.pos];
      const first = this.identifier();
      if (first === undefined) return undefined;
      const path = [first];
      for (let start = this.p.pos, next = this.selectorOrIndex(); next !== undefined; next = this.selectorOrIndex()) {
        path.push(next);
        at.push(start + 1); // the name after "." or the string inside "["
        start = this.p.pos;
      }
      return { path, at };
    });
  }

  /** Identifier <- [a-zA-Z] [a-zA-Z0-9_]* */
  private identifier(): string | undefined {
    const start = this.p.pos;
    if (!this.p.cls('[a-zA-Z]', isLetter)) return undefined;
    while (this.p.cls('[a-zA-Z0-9_]', isWordChar));
    return this.p.text(start);
  }

  /** SelectorOrIndex <- "." Identifier / IndexExpression */
  private selectorOrIndex(): string | undefined {
    return this.p.take(() => (this.p.lit('.') ? this.identifier() : undefined)) ?? this.index();
  }

  /** IndexExpression "index" <- "[" _? StringLiteral _? "]" / two error alternatives */
  private index(): string | undefined {
    const open = (): boolean => this.p.lit('[') && this.optWs();
    return (
      this.p.take(() => {
        const key = open() ? this.stringLiteral() : undefined;
        return key !== undefined && this.optWs() && this.p.lit(']') ? key : undefined;
      }) ??
      this.p.take(() => {
        if (open() && this.p.not(() => this.stringLiteral())) this.p.issue('"index"', 'Invalid index', ['"\\""', '"`"']);
        return undefined;
      }) ??
      this.p.take(() => {
        const key = open() ? this.stringLiteral() : undefined;
        if (key !== undefined && this.optWs() && this.p.not(() => this.p.lit(']'))) {
          this.p.issue('"index"', 'Unclosed index expression', ['"]"']);
        }
        return undefined;
      })
    );
  }

  /** Value "value" <- Selector (its text, dotted) / NumberLiteral / StringLiteral */
  private value(): string | undefined {
    const selector = this.selector();
    if (selector) return selector.path.join('.');
    return this.number() ?? this.stringLiteral();
  }

  /** NumberLiteral "number" <- "-"? IntegerOrFloat &AfterNumbers / "-"? IntegerOrFloat !AfterNumbers &{error} */
  private number(): string | undefined {
    const start = this.p.pos;
    const digits = (): boolean => {
      this.p.lit('-');
      return this.integerOrFloat();
    };
    return (
      this.p.take(() => (digits() && this.p.ahead(() => this.afterNumber()) ? this.p.text(start) : undefined)) ??
      this.p.take(() => {
        if (digits() && this.p.not(() => this.afterNumber())) {
          this.p.issue('"number"', 'Invalid number literal', [ws, '")"', 'EOF']);
        }
        return undefined;
      })
    );
  }

  /** AfterNumbers <- &(_ / EOF / ")") */
  private afterNumber(): boolean {
    return this.p.ahead(() => this.ws() || this.eof() || this.p.lit(')'));
  }

  /** IntegerOrFloat <- ("0" / [1-9][0-9]*) ("." [0-9]+)? */
  private integerOrFloat(): boolean {
    return this.p.seq(() => {
      const whole = this.p.lit('0') || (this.p.cls('[1-9]', isNonZeroDigit) && this.digits());
      if (whole) this.p.seq(() => this.p.lit('.') && this.p.cls('[0-9]', isDigit) && this.digits());
      return whole;
    });
  }

  private digits(): true {
    while (this.p.cls('[0-9]', isDigit));
    return true;
  }

  /** StringLiteral "string" <- (`raw` / "interpreted") {Unquote} / (`raw / "interpreted) EOF &{error} */
  private stringLiteral(): string | undefined {
    const start = this.p.pos;
    if (this.p.seq(() => this.quoted('`', true)) || this.p.seq(() => this.quoted('"', true))) {
      return this.unquote(this.p.text(start), start);
    }
    this.p.seq(() => {
      const open = this.p.seq(() => this.quoted('`', false)) || this.p.seq(() => this.quoted('"', false));
      if (open && this.eof()) this.p.issue('"string"', 'Unterminated string literal', [goQuote(this.p.text(start, start + 1))]);
      return false;
    });
    return undefined;
  }

  /** The action's strconv.Unquote; its failure is recorded at the literal's start but still matches. */
  private unquote(literal: string, start: number): string {
    const value = goUnquote(literal);
    if (value !== undefined) return value;
    this.p.issue('"string"', 'invalid syntax', ['a valid escape sequence'], start);
    return '';
  }

  /** A quote, then characters until the same quote (RawStringChar / DoubleStringChar <- !quote .). */
  private quoted(quote: string, closed: boolean): boolean {
    if (!this.p.lit(quote)) return false;
    while (this.p.seq(() => this.p.not(() => this.p.lit(quote)) && this.p.any()));
    return !closed || this.p.lit(quote);
  }

  /** _ "whitespace" <- [ \t\r\n]+ */
  private ws(): boolean {
    if (!this.p.cls(ws, isSpace)) return false;
    while (this.p.cls(ws, isSpace));
    return true;
  }

  /** `_?`: always succeeds. */
  private optWs(): true {
    this.ws();
    return true;
  }

  /** EOF <- !. */
  private eof(): boolean {
    return this.p.not(() => this.p.any());
  }

  /**
   * Packrat memo for the recursive rules: without it, each parenthesis level parses its contents
   * four times over (pigeon does, unmemoized), which is exponential in nesting. Replaying a result
   * is indistinguishable from reparsing: the failures it would record are already recorded.
   */
  private memoized(rule: string, parse: () => Expr | undefined): Expr | undefined {
    const key = `${rule}@${this.p.pos}`;
    const hit = this.memo.get(key);
    if (hit) {
      if (hit.expr) this.p.pos = hit.end;
      return hit.expr;
    }
    const expr = parse();
    this.memo.set(key, { end: this.p.pos, expr });
    return expr;
  }
}
