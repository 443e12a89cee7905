/** Authentication (bearer JWTs) and authorization (prefix rules, the permission each route needs). */
export {
  AuthError,
  TokenAuthority,
  authErrorCatalogue,
  bearerToken,
  clockSkewSecondsDefault,
  tokenLifetimeSecondsMaxDefault,
  issuerDefault,
  secretBytesMin,
  tokenCharsMax,
  wwwAuthenticate,
} from './tokens.ts';
export type { AuthErrorKind, TokenAuthorityOptions } from './tokens.ts';
export {
  accessFor,
  allowed,
  allowedPrefix,
  allowedSomewhere,
  allowedSomewhereUnder,
  appSubject,
  appSubjectPrefix,
  isAppSubject,
  isOperator,
  isRule,
  mayReadPathName,
  mayUseSession,
  parseRules,
  resources,
  rulePrefixCharsMax,
  rulesPerIdentityMax,
} from './acl.ts';
export type { Access, AccessRequest, Identity, Resource, Rule } from './acl.ts';
