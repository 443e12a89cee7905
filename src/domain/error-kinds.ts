/**
 * What the error catalogue is made of: the error classes of http-conventions.md (`errorKinds`), the shape
 * of one named error (`ErrorEntry`) and the helpers its entries are written with. The catalogue itself
 * is errors.ts, with the KV and transaction entries in errors-kv.ts.
 */
export const errorKinds = {
  unknown: { code: 999, status: 500, consulStatus: 500, grpc: 13, message: 'unknown error' },
  unknownUser: { code: 1001, status: 401, consulStatus: 403, grpc: 16, message: 'unknown user' },
  notLoggedIn: { code: 1002, status: 401, consulStatus: 403, grpc: 16, message: 'user not logged in' },
  tokenExpired: { code: 1005, status: 401, consulStatus: 403, grpc: 16, message: 'token expired' },
  invalidToken: { code: 1021, status: 401, consulStatus: 403, grpc: 16, message: 'invalid token' },
  expiredRequest: { code: 1023, status: 400, consulStatus: 403, grpc: 3, message: 'expired request' },
  notFound: { code: 1006, status: 404, consulStatus: 404, grpc: 5, message: 'resource does not exist' },
  objectNotFound: { code: 1007, status: 400, consulStatus: 500, grpc: 5, message: 'object does not exist' },
  missingParameter: { code: 1008, status: 400, consulStatus: 400, grpc: 3, message: 'parameters incomplete' },
  invalidParameter: { code: 1009, status: 400, consulStatus: 400, grpc: 3, message: 'illegal parameter' },
  insufficientPermission: { code: 1004, status: 403, consulStatus: 403, grpc: 7, message: 'insufficient permission' },
  inputTooLong: { code: 1011, status: 413, consulStatus: 413, grpc: 8, message: 'input too long' },
  requestTimeout: { code: 1015, status: 400, consulStatus: 408, grpc: 4, message: 'request timeout' },
  remoteUnavailable: { code: 1016, status: 503, consulStatus: 500, grpc: 14, message: 'remote server not found' },
  illegalRequest: { code: 1022, status: 400, consulStatus: 400, grpc: 3, message: 'illegal request' },
  methodNotAllowed: { code: 1022, status: 405, consulStatus: 405, grpc: 12, message: 'method not allowed' },
  unsupportedMediaType: { code: 1019, status: 415, consulStatus: 415, grpc: 3, message: 'unsupported media type' },
  headerMissing: { code: 1028, status: 428, consulStatus: 400, grpc: 3, message: 'required header missing' },
  illegalJson: { code: 1024, status: 400, consulStatus: 400, grpc: 3, message: 'illegal JSON format' },
  conflict: { code: 1025, status: 409, consulStatus: 200, grpc: 10, message: 'concurrency conflict' },
} as const;

export type ErrorKind = keyof typeof errorKinds;

/** Per-field validation details for code 1009: field name → ["<Rule>:<text>", ...]. */
export type FieldDetails = Record<string, string[]>;

/** A text of an error: fixed, or made from the error's variables. */
export type ErrorText<V> = string | ((v: V) => string);

export interface ErrorEntry<V> {
  /** The class: public code, seed status, Consul's status unless `consulStatus` says otherwise. */
  kind: ErrorKind;
  /** The seed dialect's `message`. */
  message: ErrorText<V>;
  /** The seed dialect's `details` (absent: the body has none). */
  details?: (v: V) => Record<string, unknown>;
  /** Consul's plain-text body. @default the seed message */
  consulText?: ErrorText<V>;
  /** The seed status where one class serves several (429, 503). @default the class's status */
  status?: number;
  /** Consul's status. @default the class's consulStatus */
  consulStatus?: number | ((v: V) => number);
  /** Response headers the error needs in both dialects (Retry-After, Allow). */
  headers?: (v: V) => [string, string][];
  /**
   * Response headers of the seed dialect only: a 401's WWW-Authenticate (Consul answers those refusals 403
   * with no challenge).
   */
  seedHeaders?: (v: V) => [string, string][];
  /**
   * A server error by its class's status whose cause is the request alone, not the agent's state (`?dc=`
   * naming another datacenter): its request line is logged at debug, as a 4xx's is. @default false
   */
  callerFault?: boolean;
}

/** An entry whose texts are made of variables `V` (none by default); `vars` only carries the type. */
export function entry<V = undefined>(e: ErrorEntry<V>): ErrorEntry<V> & { readonly vars?: [V] } {
  return e;
}

export const text = <V>(t: ErrorText<V> | undefined, v: V): string | undefined => (typeof t === 'function' ? t(v) : t);
/** `{ field: ["Rule:text"] }`, the 1009 details of one broken rule. */
export const rule = (field: string, r: string): Record<string, unknown> => ({ [field]: [r] });
export type Reason = { reason: string };

/**
 * A body's field rules gathered (FieldErrors in src/http), answered as `kind`: their details, a message
 * naming the field and its first rule (`invalid TTL: …`) or every field (`missing fields: Node, Address`),
 * and Consul's text and status, those of the first rule broken that has one.
 */
export const fieldRefusal = (kind: ErrorKind, word: 'invalid' | 'missing') => entry<{ fields: FieldDetails; consul?: { status: number; text: string } }>({
  kind, details: (v) => v.fields,
  message: (v) => {
    const names = Object.keys(v.fields);
    const first = v.fields[names[0]!]![0]!;
    return names.length === 1 ? `${word} ${names[0]}: ${first.slice(first.indexOf(':') + 1)}` : `${word} fields: ${names.join(', ')}`;
  },
  consulStatus: (v) => v.consul?.status ?? 400, consulText: (v) => v.consul?.text ?? `Request decode failed: invalid ${Object.keys(v.fields)[0]}`,
});

/** A path without its trailing parameter: `field` names it in the details, `what` in the message. */
export const missingInPath = (field: string, consulText: string, what = field, required = 'must not be empty') => entry({
  kind: 'missingParameter', message: `missing ${what} in the path`, details: () => rule(field, `Required:${required}`), consulText,
});

/** A 401's WWW-Authenticate challenge: the seed dialect sends one with every 401 (RFC 9110 §15.5.2). */
type Challenge = { challenge?: string };
const challenged = (v: Challenge): [string, string][] => (v.challenge === undefined ? [] : [['WWW-Authenticate', v.challenge]]);

/** A bearer token refused (401 in the seed dialect; Consul's 403 `ACL not found`). */
export const tokenRefusal = (kind: ErrorKind) => entry<{ why: string; credentials: string } & Challenge>({
  kind, message: (v) => v.why, details: (v) => ({ credentials: v.credentials }), consulStatus: 403, consulText: 'ACL not found',
  seedHeaders: challenged,
});

/** A signed request refused (its class's status in the seed dialect; Consul's 403 `Permission denied`). */
export const signatureRefusal = (kind: ErrorKind) => entry<{ why: string; signature: string } & Challenge>({
  kind, message: (v) => `request signature refused: ${v.why}`, details: (v) => ({ signature: v.signature }), consulStatus: 403, consulText: 'Permission denied',
  seedHeaders: challenged,
});
