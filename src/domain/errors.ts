/**
 * One error catalogue. Each kind has its public code and HTTP status from http-conventions.md (the
 * seed dialect), the status Consul uses for it (the consul dialect; a RegistryError may override it
 * where Consul answers differently for one case), and a gRPC status code for the gRPC front end.
 * Expected failures ("did not acquire lock") are values of this type; broken invariants are assertions.
 */
export const errorCatalogue = {
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

export type ErrorKind = keyof typeof errorCatalogue;

/** Per-field validation details for code 1009: field name → ["<Rule>:<text>", ...]. */
export type FieldDetails = Record<string, string[]>;

/** What the consul dialect sends instead (status and plain-text body), where it differs from the catalogue. */
export interface ConsulRendering {
  status?: number;
  text?: string;
}

export class RegistryError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly consul?: ConsulRendering,
    /** Extra response headers the error needs (WWW-Authenticate on a 401, Retry-After on a 503). */
    readonly headers: [string, string][] = [],
  ) {
    super(message);
    this.name = 'RegistryError';
  }
}

/** 1009 with one field's rule broken. */
export function invalidField(field: string, rule: string, text: string, consul?: ConsulRendering): RegistryError {
  return new RegistryError('invalidParameter', `invalid ${field}: ${text}`, { [field]: [`${rule}:${text}`] }, consul);
}
