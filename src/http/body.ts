/** JSON request bodies: parse errors are 1024, field lookup is case-insensitive like Go's encoding/json. */
import { RegistryError } from '../domain/errors.ts';
import type { Request } from './request.ts';

/** Parses the body as JSON; undefined when the body is empty (Consul processes bodies only when present). */
export function jsonBody(req: Request): unknown {
  if (req.body.length === 0) return undefined;
  if (req.jsonTypeRequired === true) checkJsonType(req.headers.get('content-type'));
  try {
    return JSON.parse(req.body.toString('utf8')) as unknown;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new RegistryError('illegalJson', `request body is not valid JSON: ${why}`, { body: [`JSON:${why}`] }, { status: 400, text: `Request decode failed: ${why}` });
  }
}

/**
 * http-conventions.md "Common headers": requests carry `application/json;charset=utf-8`. A missing
 * type is a missing required header (428, 1028); another type, or a charset other than UTF-8, is 415.
 */
function checkJsonType(contentType: string | undefined): void {
  if (contentType === undefined || contentType.trim() === '') {
    throw new RegistryError('headerMissing', 'the Content-Type header is required: send application/json;charset=utf-8',
      { 'Content-Type': ['Required:send application/json;charset=utf-8'] });
  }
  const [mime, ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"|"$/g, '');
  if (mime !== 'application/json' || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new RegistryError('unsupportedMediaType', `unsupported media type ${JSON.stringify(contentType)}: this endpoint takes application/json;charset=utf-8`,
      { 'Content-Type': [`MediaType:${contentType}`], accepted: ['application/json;charset=utf-8'] }, { status: 415, text: 'Unsupported Media Type' });
  }
}

export function jsonObject(req: Request): Record<string, unknown> | undefined {
  const value = jsonBody(req);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new RegistryError('illegalJson', 'request body must be a JSON object', { body: ['Type:must be a JSON object'] }, {
      status: 400, text: `Request decode failed: json: cannot unmarshal ${Array.isArray(value) ? 'array' : typeof value} into Go value of type structs.Session`,
    });
  }
  return value as Record<string, unknown>;
}

/** Finds a field by name, ignoring case, as Go's decoder does (`ttl`, `TTL` and `Ttl` are one field). */
export function field(obj: Record<string, unknown> | undefined, name: string): { present: boolean; value: unknown } {
  if (obj === undefined) return { present: false, value: undefined };
  if (name in obj) return { present: true, value: obj[name] };
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return { present: true, value: obj[k] };
  return { present: false, value: undefined };
}

/** Collects per-field rule violations and throws them together as one 1009. */
export class FieldErrors {
  private readonly details: Record<string, string[]> = {};
  private consulText: string | undefined;
  private consulStatus = 400;

  add(fieldName: string, rule: string, text: string, consul?: { status: number; text: string }): void {
    (this.details[fieldName] ??= []).push(`${rule}:${text}`);
    if (consul !== undefined && this.consulText === undefined) {
      this.consulText = consul.text;
      this.consulStatus = consul.status;
    }
  }

  throwIfAny(): void {
    const fields = Object.keys(this.details);
    if (fields.length === 0) return;
    const first = this.details[fields[0]!]![0]!;
    const message = fields.length === 1 ? `invalid ${fields[0]}: ${first.slice(first.indexOf(':') + 1)}` : `invalid fields: ${fields.join(', ')}`;
    throw new RegistryError('invalidParameter', message, this.details, {
      status: this.consulStatus, text: this.consulText ?? `Request decode failed: invalid ${fields[0]}`,
    });
  }
}
