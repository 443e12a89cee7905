/**
 * `matches` patterns. bexpr compiles them with Go's regexp, which is RE2: its syntax (no backreferences,
 * no lookaround), and matching in time linear in the text. They run here on re2js, a port of RE2 (by way
 * of RE2/J, itself a port of Go's regexp) that parses the same syntax with Go's error texts and matches
 * with RE2's DFA and NFA, never by backtracking. No pattern reaches a JavaScript RegExp, whose engine
 * backtracks: there `(.+)+Z` runs exponentially long, on the event loop, on anyone's request.
 *
 * Linear in the text still means proportional to the text times the compiled program, and compiling
 * takes time in proportion to the program: a counted repetition multiplies what it repeats
 * (`(?:a|aa){0,1000}` is a 16-character pattern of 5,002 instructions). So the program size of one
 * filter's patterns, all together, is bounded, and checked from the pattern's text before compiling.
 */
import { RE2JS, RE2JSException } from 're2js';
import { FilterError, type FilterPosition } from './errors.ts';
import { goQuote } from './go-strconv.ts';

/**
 * The most RE2 instructions the patterns of one filter may compile to, together. Where re2js's DFA
 * cannot keep its states cached it falls back to the NFA, which takes up to about 0.25 µs per
 * instruction and character of text: at this size, at worst about a second for a 4 KiB check output
 * (the DFA takes microseconds on the same text for most patterns). Realistic patterns are far below it:
 * a UUID pattern is 40 instructions, `^.{0,255}$` 514. Go's own parser bounds a program only far above
 * it: Consul would accept `a{1000}` (1,002 with what ends a program), which is refused here.
 */
export const filterPatternInstsMax = 1000;

/** What the patterns of the filter being compiled may still take, in RE2 instructions. */
export interface PatternBudget {
  instsLeft: number;
}

export function patternBudget(): PatternBudget {
  return { instsLeft: filterPatternInstsMax };
}

/** Compiles an RE2 pattern into an unanchored test (Go's MatchString) and charges `budget`; throws FilterError. */
export function compilePattern(raw: string, at: FilterPosition, budget: PatternBudget): (text: string) => boolean {
  const fail = (why: string): FilterError =>
    new FilterError(`Failed to compile regular expression ${goQuote(raw)}: ${why}`, at, ['an RE2 regular expression']);
  const bound = programSizeBound(raw);
  // A repetition Go refuses is refused by the parser, before anything is compiled, with Go's text.
  if (bound.insts > budget.instsLeft && !bound.repeatInvalid) throw fail(tooLarge(bound, budget));
  let re: RE2JS;
  try {
    re = RE2JS.compile(raw);
  } catch (error) {
    if (error instanceof RE2JSException) throw fail(error.message);
    throw error;
  }
  // The bound is meant never to fall short; should it, the compiled size still keeps to the budget.
  if (re.programSize() > budget.instsLeft) throw fail(tooLarge({ insts: re.programSize(), repeatInvalid: false }, budget));
  budget.instsLeft -= re.programSize();
  return (text) => re.test(text);
}

function tooLarge(bound: SizeBound, budget: PatternBudget): string {
  const spent = filterPatternInstsMax - budget.instsLeft;
  const others = spent > 0 ? ` (the filter's earlier patterns take ${spent})` : '';
  const repeat = bound.largestRepeat === undefined ? '' : `; the largest part is the counted repetition \`${bound.largestRepeat}\``;
  return `expression too large: the patterns of one filter may compile to at most ${filterPatternInstsMax} RE2 instructions${others}, `
    + `and this one may take up to ${bound.insts}${repeat}`;
}

/**
 * An upper bound on a pattern's compiled size, the counted repetition (`{n,m}`) that grows it most, and
 * whether its counted repetitions are past what Go's parser takes (`invalid repeat count`: more than
 * 1000, or nested ones whose counts multiply past 1000): such a pattern fails to parse before it compiles.
 */
export interface SizeBound {
  insts: number;
  largestRepeat?: string;
  repeatInvalid: boolean;
}

/** A group being read. */
interface Frame {
  /** The size of its items before the last one. */
  done: number;
  /** The size of its last item: what a repetition after it repeats. */
  last: number;
  /** The product of the counted repetitions in the last item, as Go's repeatIsValid multiplies them. */
  lastRepeats: number;
  /** The largest such product among the items before the last one. */
  repeats: number;
  /** `done` where its current alternative began: an empty alternative compiles to one instruction. */
  branch: number;
  /** A capturing group: two instructions more. */
  capture: boolean;
}

const goRepeatMax = 1000;

/**
 * Reads RE2 syntax just far enough to bound the program it compiles to (as re2js counts it in
 * programSize): one instruction per literal rune, class, `.`, assertion or alternative, two per capturing
 * group, one more per `+` and `?` and two per `*`, and copies for a counted repetition. Syntax errors are
 * left to the compiler: whatever the text, the bound is found in one pass.
 */
export function programSizeBound(pattern: string): SizeBound {
  const reader = new SizeReader();
  for (let i = 0; i < pattern.length;) i = reader.step(pattern, i);
  return reader.bound();
}

class SizeReader {
  private readonly frames: Frame[] = [frame(false)];
  private top = this.frames[0]!;
  private largest: { insts: number; text?: string } = { insts: 0 };
  private repeatInvalid = false;

  /** Reads what starts at `i`; returns where the next thing starts. */
  step(pattern: string, i: number): number {
    const ch = pattern[i]!;
    if (ch === '\\' && pattern[i + 1] === 'Q') {
      const end = quotedEnd(pattern, i + 2);
      for (let k = i + 2; k < end.text; k++) this.item(1);
      return end.next;
    }
    if (ch === '\\') return this.item(1, escapeEnd(pattern, i));
    if (ch === '[') return this.item(1, classEnd(pattern, i));
    if (ch === '(') return this.open(groupOpening(pattern, i));
    if (ch === ')' && this.frames.length > 1) return this.close(i + 1);
    if (ch === '|') return this.alternative(i + 1);
    if (ch === '*' || ch === '+' || ch === '?') {
      this.top.last += ch === '*' ? 2 : 1;
      return lazyEnd(pattern, i + 1);
    }
    const repeat = ch === '{' ? countedRepeat(pattern, i) : undefined;
    if (repeat === undefined) return this.item(1, i + 1);
    this.repeat(repeat, pattern.slice(i, repeat.next));
    return lazyEnd(pattern, repeat.next);
  }

  bound(): SizeBound {
    const insts = this.frames.reduce((sum, f) => sum + closed(f) + (f.capture ? 2 : 0), 0) + 2;
    return { insts, ...(this.largest.text === undefined ? {} : { largestRepeat: this.largest.text }), repeatInvalid: this.repeatInvalid };
  }

  private item(size: number, next = 0, repeats = 0): number {
    const top = this.top;
    top.done += top.last;
    top.repeats = Math.max(top.repeats, top.lastRepeats);
    top.last = size;
    top.lastRepeats = repeats;
    return next;
  }

  private open(opening: { group: boolean; capture: boolean; next: number }): number {
    if (opening.group) {
      this.item(0);
      this.top = frame(opening.capture);
      this.frames.push(this.top);
    }
    return opening.next;
  }

  private close(next: number): number {
    const group = this.frames.pop()!;
    this.top = this.frames[this.frames.length - 1]!;
    this.top.last = closed(group) + (group.capture ? 2 : 0);
    this.top.lastRepeats = Math.max(group.repeats, group.lastRepeats);
    return next;
  }

  private alternative(next: number): number {
    const top = this.top;
    this.item(0);
    top.done = closed(top) + 1;
    top.branch = top.done;
    return next;
  }

  private repeat(repeat: Repeat, text: string): void {
    const top = this.top;
    top.last = repeated(top.last, repeat);
    // Go's repeatIsValid: a count of 0 is always valid; {n,} counts n. A minimum past the maximum is invalid too.
    const count = repeat.max ?? repeat.min;
    top.lastRepeats = count === 0 ? 0 : count * Math.max(top.lastRepeats, 1);
    if (top.lastRepeats > goRepeatMax || repeat.min > (repeat.max ?? repeat.min)) this.repeatInvalid = true;
    if (top.last > this.largest.insts) this.largest = { insts: top.last, text };
  }
}

function frame(capture: boolean): Frame {
  return { done: 0, last: 0, lastRepeats: 0, repeats: 0, branch: 0, capture };
}

/** The frame's size once its current alternative ends. */
function closed(frame: Frame): number {
  const size = frame.done + frame.last;
  return size === frame.branch ? size + 1 : size;
}

/**
 * `size` instructions repeated `{min,max}` times (max undefined for `{n,}`): RE2 writes out max copies,
 * those past min each made optional by one more instruction; `{n,}` is n copies, the last one looped
 * (`{0,}` is `*`); `{0}` is one empty instruction.
 */
function repeated(size: number, repeat: Repeat): number {
  if (repeat.max === undefined) return Math.max(repeat.min, 1) * size + 2;
  return repeat.min * size + Math.max(repeat.max - repeat.min, 0) * (size + 1) + 1;
}

interface Repeat {
  min: number;
  max: number | undefined;
  next: number;
}

/** `{n}`, `{n,}` or `{n,m}` at `i`; anything else, `{01}` too (Go takes no leading zero), is a literal `{`. */
function countedRepeat(pattern: string, i: number): Repeat | undefined {
  const m = at(/\{(0|[1-9]\d*)(,(0|[1-9]\d*)?)?\}/y, pattern, i);
  if (m === null) return undefined;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === undefined ? undefined : Number(m[3]);
  return { min, max, next: i + m[0].length };
}

/** After a repetition operator: past its `?` when it is the non-greedy form. */
function lazyEnd(pattern: string, i: number): number {
  return pattern[i] === '?' ? i + 1 : i;
}

/** `\Q…\E` from the text after `\Q`: where the literal text ends and where reading goes on. */
function quotedEnd(pattern: string, from: number): { text: number; next: number } {
  const end = pattern.indexOf('\\E', from);
  return end === -1 ? { text: pattern.length, next: pattern.length } : { text: end, next: end + 2 };
}

/** Past one escape at `i` (a backslash): `\p{Greek}`, `\pL`, `\x{10FFFF}`, `\x41`, `\123`, `\d`, `\.`. */
function escapeEnd(pattern: string, i: number): number {
  const kind = pattern[i + 1] ?? '';
  if (/[pPx]/.test(kind) && pattern[i + 2] === '{') {
    const close = pattern.indexOf('}', i + 3);
    return close === -1 ? pattern.length : close + 1;
  }
  if (kind === 'p' || kind === 'P') return i + 3;
  if (kind === 'x') return i + 4;
  if (/[0-7]/.test(kind)) return i + 2 + (at(/[0-7]{0,2}/y, pattern, i + 2)?.[0].length ?? 0);
  return i + 2;
}

/** Past a character class opened at `i`: `[^]a]`, `[[:alpha:]\]x-z]`. One instruction, whatever it holds. */
function classEnd(pattern: string, i: number): number {
  let k = i + 1;
  if (pattern[k] === '^') k += 1;
  if (pattern[k] === ']') k += 1; // a first `]` is a member, not the end
  while (k < pattern.length && pattern[k] !== ']') {
    if (pattern[k] === '\\') k = escapeEnd(pattern, k);
    else k += at(/\[:\^?[a-z]*:\]/y, pattern, k)?.[0].length ?? 1;
  }
  return Math.min(k + 1, pattern.length);
}

/**
 * At a `(`: a capturing group (plain, `(?P<name>`, `(?<name>`), a group that does not capture (`(?:`,
 * `(?i:`), or a flag setting such as `(?i)`. What Go would refuse (`(?=`) counts as a capturing group.
 */
function groupOpening(pattern: string, i: number): { group: boolean; capture: boolean; next: number } {
  if (pattern[i + 1] !== '?') return { group: true, capture: true, next: i + 1 };
  const flags = at(/\(\?[imsU-]*([:)])/y, pattern, i);
  if (flags !== null) return { group: flags[1] === ':', capture: false, next: i + flags[0].length };
  const named = at(/\(\?P?<\w*>/y, pattern, i);
  return { group: true, capture: true, next: named === null ? i + 2 : i + named[0].length };
}

/** `sticky` (a /y expression) matched exactly at `i`. */
function at(sticky: RegExp, pattern: string, i: number): RegExpExecArray | null {
  sticky.lastIndex = i;
  return sticky.exec(pattern);
}
