/** JSON request bodies: parse errors are 1024, field lookup is case-insensitive like Go's encoding/json. */
import { isUtf8 } from 'node:buffer';
import { RegistryError, type FieldDetails } from '../domain/errors.ts';
import { brokenRule, type FieldRuleArgs, type FieldRuleName } from '../domain/field-rules.ts';
import type { Request } from './request.ts';

/** Parses the body as JSON; undefined when the body is empty (Consul processes bodies only when present). */
export function jsonBody(req: Request): unknown {
  if (req.body.length === 0) return undefined;
  if (req.jsonTypeRequired === true) checkJsonType(req.headers.get('content-type'));
  checkUtf8(req);
  try {
    return JSON.parse(req.body.toString('utf8')) as unknown;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new RegistryError('bodyNotJson', { why });
  }
}

/**
 * The seed dialect's bodies are UTF-8 (their type says so): other bytes are refused, since decoding would
 * turn each into U+FFFD and two different names into one (as the path's are refused). The consul dialect
 * decodes them as Go's encoding/json does, into U+FFFD.
 */
export function checkUtf8(req: Request): void {
  if (req.jsonTypeRequired === true && !isUtf8(req.body)) throw new RegistryError('bodyNotJson', { why: 'the body is not valid UTF-8' });
}

/**
 * http-conventions.md "Common headers": requests carry `application/json;charset=utf-8`. A missing
 * type is a missing required header (428, 1028); another type, or a charset other than UTF-8, is 415.
 */
export function checkJsonType(contentType: string | undefined): void {
  if (contentType === undefined || contentType.trim() === '') {
    throw new RegistryError('contentTypeMissing');
  }
  const [mime, ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"|"$/g, '');
  if (mime !== 'application/json' || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new RegistryError('mediaTypeUnsupported', { contentType });
  }
}

/** The body as a JSON object, or undefined when empty or null; `goType` is what Consul decodes it into (its error text names it). */
export function jsonObject(req: Request, goType: string): Record<string, unknown> | undefined {
  const value = jsonBody(req);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new RegistryError('bodyNotObject', { got: Array.isArray(value) ? 'array' : typeof value, goType });
  }
  return value as Record<string, unknown>;
}

/** A JSON value's kind as Go's decoder names it in a type error (`cannot unmarshal number into ...`). */
export function goJsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'number' || typeof value === 'string' ? typeof value : 'object';
}

/**
 * Finds a field by name, ignoring case, as Go's decoder does (`ttl`, `TTL` and `Ttl` are one field): the
 * last key given wins, as each key Go reads replaces what an earlier one set.
 */
export function field(obj: Record<string, unknown> | undefined, name: string): { present: boolean; value: unknown } {
  let found: { present: boolean; value: unknown } = { present: false, value: undefined };
  if (obj === undefined) return found;
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) found = { present: true, value: obj[k] };
  return found;
}

/**
 * Collects per-field rule violations and throws them together: 1008 (parameters incomplete) when the only
 * fault is that required fields are missing, else 1009 (illegal parameter), the details naming every field.
 */
export class FieldErrors {
  private readonly fields: FieldDetails = {};
  private consul: { status: number; text: string } | undefined;
  private illegal = false;

  /** A rule broken on `fieldName` that Consul has no text of its own for. */
  add(fieldName: string, rule: string, text: string): void {
    (this.fields[fieldName] ??= []).push(`${rule}:${text}`);
    if (rule !== 'Required') this.illegal = true;
  }

  /** A rule of the catalogue (src/domain/field-rules.ts) broken on `fieldName`. */
  broke<N extends FieldRuleName>(fieldName: string, name: N, ...args: FieldRuleArgs<N>): void {
    const r = brokenRule(name, ...args);
    this.add(fieldName, r.rule, r.text);
    this.consul ??= r.consul;
  }

  throwIfAny(): void {
    if (Object.keys(this.fields).length === 0) return;
    throw new RegistryError(this.illegal ? 'fieldsInvalid' : 'fieldsMissing', { fields: this.fields, ...(this.consul ? { consul: this.consul } : {}) });
  }
}
