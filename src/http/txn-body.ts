/**
 * The body of `PUT /v1/txn`: a JSON array of operations `{"KV": {Verb, Key, Value, Flags, Index,
 * Session}}`, decoded as Consul's Go decoder does (member names in any case, null as the zero value,
 * Value base64, Flags and Index exact uint64) into the transaction's KV operations. Type errors are
 * refused with Consul's texts (400 "Failed to parse body: ..."); an operation of another kind (Node,
 * Service, Check, Session) with a 400 naming it; more than txnOpsMax operations with a 413.
 */
import { randomBytes } from 'node:crypto';
import { RegistryError } from '../domain/errors.ts';
import { txnOpsMax } from '../domain/limits.ts';
import { field } from './body.ts';
import { parseUint64 } from './query.ts';

/** A KV operation as the body gives it: the verb not yet checked against the known ones. */
export interface BodyOp { verb: string; key: string; value: string | null; flags: string; index: string; session: string }

/** The operation kinds Consul's transactions also hold, which this agent's do not. */
const otherKinds = ['Node', 'Service', 'Check', 'Session'] as const;

/** A big integer of the body, kept exact as its text (see parseExact). */
class ExactNumber {
  constructor(readonly text: string) {}
}

function refuse(why: string): RegistryError {
  return new RegistryError('txnBodyInvalid', { why });
}

/** Go's name for the JSON type of a value, as its "cannot unmarshal" errors say it. */
function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'string') return 'string';
  if (v instanceof ExactNumber) return 'number';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'number' ? 'number' : 'object';
}

const cannot = (v: unknown, where: string, type: string) => refuse(`json: cannot unmarshal ${jsonType(v)} into ${where} of type ${type}`);
const kvField = (name: string) => `Go struct field KVTxnOp.KV.${name}`;

/**
 * JSON.parse with integers of 16 digits or more kept exact (as ExactNumber): such number tokens (outside
 * strings) are rewritten as strings carrying a mark first, and turned back as they are parsed. The mark
 * holds a random part, so no string of the body can pass for a number. Flags may be any uint64.
 */
export function parseExact(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  const mark = `\u0000uint-${randomBytes(8).toString('hex')}:`;
  const number = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '"') {
      i = afterString(text, i);
      continue;
    }
    number.lastIndex = i;
    const m = ch === '-' || (ch >= '0' && ch <= '9') ? number.exec(text) : null;
    if (m === null) { i++; continue; }
    if (/^-?\d{16,}$/.test(m[0])) {
      out += `${text.slice(copied, i)}${JSON.stringify(mark + m[0])}`;
      copied = i + m[0].length;
    }
    i += m[0].length;
  }
  return JSON.parse(out + text.slice(copied), (_key, v: unknown) => (typeof v === 'string' && v.startsWith(mark) ? new ExactNumber(v.slice(mark.length)) : v));
}

/** The index just past the string literal that starts at `start`. */
function afterString(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '"') return i + 1;
    else i++;
  }
  return i;
}

function stringOf(v: unknown, name: string, type = 'string'): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  throw cannot(v, kvField(name), type);
}

function uint64Of(v: unknown, name: string): string {
  if (v === undefined || v === null) return '0';
  const text = typeof v === 'number' ? String(v) : v instanceof ExactNumber ? v.text : undefined;
  if (text === undefined) throw cannot(v, kvField(name), 'uint64');
  const parsed = typeof v === 'number' && !Number.isSafeInteger(v) ? undefined : parseUint64(text);
  if (parsed === undefined) throw refuse(`json: cannot unmarshal number ${text} into ${kvField(name)} of type uint64`);
  return parsed;
}

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Value: base64 (Go's standard encoding, which skips CR and LF) or null; empty reads as no value. */
function valueOf(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw cannot(v, kvField('Value'), '[]uint8');
  const text = v.replace(/[\r\n]/g, '');
  if (!base64Pattern.test(text)) {
    const bad = text.search(/[^A-Za-z0-9+/=]/);
    throw refuse(`illegal base64 data at input byte ${bad >= 0 ? bad : Math.floor(text.length / 4) * 4}`);
  }
  return text === '' ? null : text;
}

function operationOf(item: unknown, opIndex: number): BodyOp {
  if (typeof item !== 'object' || item === null || Array.isArray(item) || item instanceof ExactNumber) throw cannot(item, 'Go value', 'api.TxnOp');
  const op = item as Record<string, unknown>;
  const kv = field(op, 'KV').value;
  for (const kind of otherKinds) {
    const other = field(op, kind);
    if (other.present && other.value !== null) throw new RegistryError('txnOpNotKv', { opIndex, kind });
  }
  if (kv === undefined || kv === null) throw refuse(`operation ${opIndex} has no KV member`);
  if (typeof kv !== 'object' || Array.isArray(kv) || kv instanceof ExactNumber) throw cannot(kv, 'Go struct field TxnOp.KV', 'api.KVTxnOp');
  const o = kv as Record<string, unknown>;
  return {
    verb: stringOf(field(o, 'Verb').value, 'Verb', 'api.KVOp'),
    key: stringOf(field(o, 'Key').value, 'Key'),
    value: valueOf(field(o, 'Value').value),
    flags: uint64Of(field(o, 'Flags').value, 'Flags'),
    index: uint64Of(field(o, 'Index').value, 'Index'),
    session: stringOf(field(o, 'Session').value, 'Session'),
  };
}

/** The operations of a transaction body, in order; throws the 400 or 413 refusing it. */
export function txnOperations(body: Buffer): BodyOp[] {
  let parsed: unknown;
  try {
    parsed = body.length === 0 ? undefined : parseExact(body.toString('utf8'));
  } catch (err) {
    throw refuse(err instanceof Error ? err.message : String(err));
  }
  if (parsed === undefined) throw refuse('EOF');
  if (parsed === null) return [];
  if (!Array.isArray(parsed)) throw cannot(parsed, 'Go value', 'api.TxnOps');
  const ops = parsed.map(operationOf);
  if (ops.length > txnOpsMax) throw new RegistryError('txnOpsTooMany', { count: ops.length, max: txnOpsMax });
  return ops;
}
