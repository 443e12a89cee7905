/**
 * A PEG cursor that fails the way pigeon-generated parsers do (bexpr's parser is one), so that a
 * hand-written grammar on top reports bexpr's positions and expected lists:
 *  - every terminal that fails records what it wanted at the position where it *started*;
 *  - only the farthest such position is kept, with the set of everything wanted there;
 *  - inside `!e` the bookkeeping inverts: terminals that *match* are recorded as "!want"
 *    ("!." is how EOF gets into the list);
 *  - semantic predicates and actions may record errors, which win over "no match found".
 */
import type { FilterPosition } from './errors.ts';
import { goQuote } from './go-strconv.ts';

/** An error recorded by a predicate or action: pigeon prints it as `L:C (O): rule "name": message`. */
export interface PegIssue {
  at: number;
  rule: string;
  message: string;
  expected: readonly string[];
}

export class Peg {
  /** Cursor, in characters (code points) of the expression. */
  pos = 0;
  readonly issues: PegIssue[] = [];
  private readonly chars: readonly string[];
  /** Made on first use: only errors and patterns ask where they are. */
  private positions: readonly FilterPosition[] | undefined;
  private inverted = false;
  private farthest = 0;
  private readonly wanted = new Set<string>();
  private readonly issueKeys = new Set<string>();

  constructor(text: string) {
    this.chars = Array.from(text);
  }

  text(from: number, to = this.pos): string {
    return this.chars.slice(from, to).join('');
  }

  position(at: number): FilterPosition {
    this.positions ??= positionTable(this.chars);
    return this.positions[at] as FilterPosition;
  }

  /** A literal; its %q form is what a miss reports. */
  lit(word: string): boolean {
    const start = this.pos;
    for (const ch of word) {
      if (this.chars[this.pos] !== ch) {
        this.pos = start;
        this.note(false, start, quotedWord(word));
        return false;
      }
      this.pos++;
    }
    this.note(true, start, quotedWord(word));
    return true;
  }

  /** One character of a class; `label` is the class as the grammar spells it, e.g. [a-zA-Z]. */
  cls(label: string, test: (ch: string) => boolean): boolean {
    const ch = this.chars[this.pos];
    const matched = ch !== undefined && test(ch);
    this.note(matched, this.pos, label);
    if (matched) this.pos++;
    return matched;
  }

  /** Any one character (pigeon's `.`). */
  any(): boolean {
    const matched = this.pos < this.chars.length;
    this.note(matched, this.pos, '.');
    if (matched) this.pos++;
    return matched;
  }

  /** `!e`: succeeds, consuming nothing, where e fails. */
  not(rule: () => unknown): boolean {
    const start = this.pos;
    this.inverted = !this.inverted;
    const matched = succeeded(rule());
    this.inverted = !this.inverted;
    this.pos = start;
    return !matched;
  }

  /** `&e`: succeeds, consuming nothing, where e succeeds. */
  ahead(rule: () => unknown): boolean {
    const start = this.pos;
    const matched = succeeded(rule());
    this.pos = start;
    return matched;
  }

  /** A sequence that yields a value: on undefined the cursor goes back to where it began. */
  take<T>(rule: () => T | undefined): T | undefined {
    const start = this.pos;
    const value = rule();
    if (value === undefined) this.pos = start;
    return value;
  }

  /** A sequence that yields nothing: on false the cursor goes back to where it began. */
  seq(rule: () => boolean): boolean {
    return this.take(() => rule() || undefined) ?? false;
  }

  /** Records a predicate's or action's error (deduplicated, as pigeon does, by its text). */
  issue(rule: string, message: string, expected: readonly string[], at = this.pos): void {
    const key = `${at}\u0000${rule}\u0000${message}`;
    if (this.issueKeys.has(key)) return;
    this.issueKeys.add(key);
    this.issues.push({ at, rule, message, expected });
  }

  /** The farthest failure: where, and what was wanted there (sorted bytewise, EOF last). */
  farthestFailure(): { at: number; expected: string[] } {
    const wanted = new Set(this.wanted);
    const eof = wanted.delete('!.');
    const expected = [...wanted].sort();
    if (eof) expected.push('EOF');
    return { at: this.farthest, expected };
  }

  private note(matched: boolean, at: number, want: string): void {
    if (matched !== this.inverted || at < this.farthest) return;
    if (at > this.farthest) {
      this.farthest = at;
      this.wanted.clear();
    }
    this.wanted.add(this.inverted ? `!${want}` : want);
  }
}

/** The %q form of the grammar's literals, made once each: a parse tries them at nearly every character. */
const quotedWords = new Map<string, string>();

function quotedWord(word: string): string {
  let quoted = quotedWords.get(word);
  if (quoted === undefined) quotedWords.set(word, (quoted = goQuote(word)));
  return quoted;
}

function succeeded(result: unknown): boolean {
  return result !== undefined && result !== false;
}

/** Position of every cursor value 0..length, computed once so error reporting stays O(1). */
function positionTable(chars: readonly string[]): FilterPosition[] {
  const table: FilterPosition[] = [];
  let line = 1;
  let column = 0;
  let offset = 0;
  for (let i = 0; i <= chars.length; i++) {
    if (i > 0) offset += utf8Width(chars[i - 1] as string);
    column++;
    if (chars[i] === '\n') {
      line++; // pigeon moves to the next line as it reads the newline itself
      column = 0;
    }
    table.push({ line, column, offset });
  }
  return table;
}

function utf8Width(ch: string): number {
  const cp = ch.codePointAt(0) ?? 0;
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  return cp < 0x10000 ? 3 : 4;
}
