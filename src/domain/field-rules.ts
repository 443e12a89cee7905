/**
 * The field rules of the error catalogue whose breach Consul answers with a text of its own: each gives
 * the rule and text of the detail (`<Rule>:<text>`) and Consul's status and plain-text body, as
 * functions of the rule's variables. A body's broken rules are gathered (FieldErrors in src/http) and
 * answered together as `fieldsInvalid` (1009), or `fieldsMissing` (1008) when each is a `Required` field
 * left out; Consul's answer is that of the first rule broken that has one.
 * A rule that Consul does not name (a range, an unsupported field) is added by its rule and text alone.
 */

/** A broken rule: the detail's rule and text, and what Consul answers for it. */
export interface BrokenRule {
  rule: string;
  text: string;
  consul: { status: number; text: string };
}

const decodeFailed = (text: string) => ({ status: 400, text: `Request decode failed: ${text}` });
/** A value of the wrong JSON type for a field of Consul's Go struct. */
const goType = (text: string, type: string) => (v: { goField: string }): BrokenRule => ({
  rule: 'Type', text, consul: decodeFailed(`json: cannot unmarshal into Go struct field ${v.goField} of type ${type}`),
});
const invalidCheck = (text: string): BrokenRule => ({ rule: 'Invalid', text, consul: { status: 400, text: `Invalid check: ${text}` } });
const required = (text: string, consulText: string) => (): BrokenRule => ({ rule: 'Required', text, consul: { status: 400, text: consulText } });

export const fieldRules = {
  notString: goType('must be a string', 'string'),
  notBool: goType('must be true or false', 'bool'),
  notInteger: goType('must be an integer', 'int'),
  notStrings: goType('must be an array of strings', '[]string'),
  notStringMap: goType('must be an object of strings', 'map[string]string'),
  /** A key of the body that names no field of Consul's struct, refused as Consul's decoder refuses it. */
  fieldUnknown: (v: { field: string }): BrokenRule => ({
    rule: 'Unknown', text: 'this field is not part of the definition', consul: decodeFailed(`json: unknown field ${JSON.stringify(v.field)}`),
  }),
  /** A value that is not a string, where Go's type error names the value's kind: `goField` is `<struct>.<field>`. */
  valueNotString: (v: { goField: string; got: string }): BrokenRule => ({
    rule: 'Type', text: 'must be a string', consul: decodeFailed(`json: cannot unmarshal ${v.got} into Go struct field ${v.goField} of type string`),
  }),
  notHeaderMap: goType('must map header names to arrays of strings', 'map[string][]string'),
  /**
   * `rule` and `text` are the duration parser's (Range past the largest Go duration, else Format);
   * `goError` what Go's time.ParseDuration says of the value (`time: missing unit in duration "20"`).
   */
  durationInvalid: (v: { rule: string; text: string; goError: string }): BrokenRule => ({
    rule: v.rule, text: v.text, consul: decodeFailed(v.goError),
  }),
  checkInvalid: (v: { text: string }) => invalidCheck(v.text),
  /** Consul's text names the field as it does (MaxOutputMaxSize). */
  outputMaxSizeNegative: (): BrokenRule => ({
    rule: 'Range', text: "must not be negative (0 keeps the agent's cap)", consul: { status: 400, text: 'Invalid check: MaxOutputMaxSize must be positive' },
  }),
  /** A warning threshold past the critical one (`critical`: FailuresBeforeCritical), which Consul refuses. */
  failuresBeforeWarningAboveCritical: (v: { critical: number }): BrokenRule => ({
    rule: 'Range', text: `must not be higher than FailuresBeforeCritical (${v.critical})`,
    consul: { status: 400, text: "Invalid check: FailuresBeforeWarning can't be higher than FailuresBeforeCritical" },
  }),
  checkNameMissing: required('a check needs a name', 'Missing check name'),
  /** A check's Status: Consul words it differently for a check embedded in a service. */
  checkStatusBad: (v: { inService: boolean }): BrokenRule => ({
    rule: 'Enum', text: 'must be passing, warning or critical',
    consul: { status: 400, text: v.inService ? "Status for checks must 'passing', 'warning', 'critical'" : 'Bad check status' },
  }),
  checkHttpInvalid: (v: { why: string }): BrokenRule => ({ rule: 'Format', text: v.why, consul: { status: 400, text: `Invalid check: ${v.why}` } }),
  checkTcpInvalid: (v: { why: string }): BrokenRule => ({
    rule: 'Format', text: `${v.why}: give host:port ([v6]:port for IPv6)`, consul: { status: 400, text: `Invalid check: TCP ${v.why}` },
  }),
  checkGrpcInvalid: (v: { why: string }): BrokenRule => ({
    rule: 'Format', text: `${v.why}: give host:port or host:port/service`, consul: { status: 400, text: `Invalid check: GRPC ${v.why}` },
  }),
  /** Probe kinds given together (`http and tcp`), which Consul takes, running one of them. */
  checkKindsConflict: (v: { kinds: string }): BrokenRule => ({
    rule: 'Conflict', text: `give one probe kind, not ${v.kinds}`, consul: { status: 400, text: `Invalid check: give one probe kind, not ${v.kinds}` },
  }),
  /** An HTTP check's request that Go's client would not send; `go…` are the texts as Go quotes them in its refusal. */
  checkMethodInvalid: (v: { method: string; goMethod: string }): BrokenRule => ({
    rule: 'Format', text: `${v.method} is not an HTTP method: a token of letters, digits and !#$%&'*+-.^_\`|~, such as GET`,
    consul: { status: 400, text: `Invalid check: net/http: invalid method ${v.goMethod}` },
  }),
  checkHeaderNameInvalid: (v: { name: string; goName: string }): BrokenRule => ({
    rule: 'Format', text: `header name ${v.name} is not a token of letters, digits and !#$%&'*+-.^_\`|~`,
    consul: { status: 400, text: `Invalid check: net/http: invalid header field name ${v.goName}` },
  }),
  checkHeaderValueInvalid: (v: { name: string; goName: string }): BrokenRule => ({
    rule: 'Format', text: `a value of header ${v.name} holds a control character (CR, LF, NUL, ...): only tab is allowed`,
    consul: { status: 400, text: `Invalid check: net/http: invalid header field value for ${v.goName}` },
  }),
  checkHeaderValueNotAscii: (v: { name: string; goName: string }): BrokenRule => ({
    rule: 'Format', text: `a value of header ${v.name} holds a character outside ASCII, which this agent does not send (percent-encode it)`,
    consul: { status: 400, text: `Invalid check: header field value for ${v.goName} holds a character outside ASCII, which this agent does not send` },
  }),
  serviceNameMissing: required('a service needs a name', 'Missing service name'),
  serviceAddressUnspecified: (): BrokenRule => ({
    rule: 'Invalid', text: 'a service address cannot be an unspecified address', consul: { status: 400, text: 'Invalid service address' },
  }),
  /** `why`: Consul's text for the first bound broken. */
  weightsInvalid: (v: { why: string }): BrokenRule => ({
    rule: 'Invalid', text: 'Passing must be an integer from 1 to 65535 and Warning one from 0 to 65535', consul: { status: 400, text: `Invalid Weights: ${v.why}` },
  }),
  /** `why`: Consul's text for the first Meta rule broken (its pair named as Consul names it). */
  serviceMetaInvalid: (v: { why: string }): BrokenRule => ({ rule: 'Invalid', text: v.why, consul: { status: 400, text: `Invalid Service Meta: ${v.why}` } }),
  nodeNameMissing: required('must not be empty', 'Missing node name'),
  nodeAddressMissing: required('must not be empty', 'Missing node address'),
  /** `why`: what the UUID parser of Consul's catalog register says (its RPC's error: a 500). */
  nodeIdInvalid: (v: { why: string }): BrokenRule => ({ rule: 'Format', text: `must be a UUID: ${v.why}`, consul: { status: 500, text: `Bad node ID: ${v.why}` } }),
  sessionTtlNotString: (): BrokenRule => ({
    rule: 'Type', text: 'must be a duration string such as 30s',
    consul: decodeFailed('json: cannot unmarshal number into Go struct field Session.TTL of type string'),
  }),
  /** `goError`: what Go's time.ParseDuration says of the value. */
  sessionTtlInvalid: (v: { tooLong: boolean; ttlMsMin: number; value: string; goError: string }): BrokenRule => ({
    rule: v.tooLong ? 'Range' : 'Format', text: v.tooLong ? `must be between ${v.ttlMsMin / 1000}s and 24h` : 'must be a duration such as 30s',
    consul: { status: 500, text: `Session TTL '${v.value}' invalid: ${v.goError}` },
  }),
  /** `goError`: what Go's time.ParseDuration says of the value. */
  lockDelayInvalid: (v: { goError: string }): BrokenRule => ({
    rule: 'Format', text: 'must be a duration such as 15s, or a number of nanoseconds', consul: decodeFailed(v.goError),
  }),
  /** `minText`: the smallest TTL as Go prints a duration. */
  sessionTtlOutOfRange: (v: { ttlMsMin: number; ns: number; minText: string }): BrokenRule => ({
    rule: 'Range', text: `must be between ${v.ttlMsMin / 1000}s and 24h`,
    consul: { status: 500, text: `Invalid Session TTL '${v.ns}', must be between [${v.minText}=24h0m0s]` },
  }),
  sessionBehaviorInvalid: (v: { value: unknown }): BrokenRule => ({
    rule: 'Enum', text: 'must be release or delete', consul: { status: 500, text: `Invalid Behavior setting '${String(v.value)}'` },
  }),
  sessionStringsInvalid: (v: { name: string }): BrokenRule => ({
    rule: 'Type', text: 'must be an array of strings', consul: decodeFailed(`json: cannot unmarshal into Go struct field Session.${v.name} of type []string`),
  }),
  sessionServiceChecksInvalid: (): BrokenRule => ({
    rule: 'Type', text: 'must be an array of {ID, Namespace} objects', consul: decodeFailed('json: cannot unmarshal into Go struct field Session.ServiceChecks'),
  }),
  sessionFieldNotString: (v: { name: string; got: string }): BrokenRule => ({
    rule: 'Type', text: 'must be a string', consul: decodeFailed(`json: cannot unmarshal ${v.got} into Go struct field Session.${v.name} of type string`),
  }),
};

export type FieldRuleName = keyof typeof fieldRules;
/** The variables of rule `N`'s texts. */
export type FieldRuleVars<N extends FieldRuleName> = Parameters<(typeof fieldRules)[N]>[0];
export type FieldRuleArgs<N extends FieldRuleName> = undefined extends FieldRuleVars<N> ? [vars?: FieldRuleVars<N>] : [vars: FieldRuleVars<N>];

/** The broken rule `name` with its variables. */
export function brokenRule<N extends FieldRuleName>(name: N, ...args: FieldRuleArgs<N>): BrokenRule {
  return (fieldRules[name] as (v: unknown) => BrokenRule)(args[0]);
}
