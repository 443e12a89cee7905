/**
 * Selector schemas: the exact, case-sensitive field names of the JSON records an endpoint filters,
 * with the bexpr field type that decides which operators apply (spec consul-compat.md §5). Fields
 * Consul does not let filters see (CreateIndex, ModifyIndex, Definition, ...) are simply absent.
 */
export type FieldType =
  | 'string'
  | 'int'
  | 'uint'
  | 'float'
  | 'bool'
  | 'stringList'
  | 'stringMap'
  | { struct: Schema }
  | { structList: Schema };

export type Schema = Record<string, FieldType>;

/** Ready-made schemas are shared by every request, so nobody may edit them in place. */
function frozen<T extends Schema>(schema: T): T {
  for (const type of Object.values(schema)) {
    if (typeof type !== 'object') continue;
    frozen('struct' in type ? type.struct : type.structList);
    Object.freeze(type);
  }
  return Object.freeze(schema);
}

const weights: Schema = { Passing: 'int', Warning: 'int' };

/** A reasonable subset of Consul's proxy config: the scalar fields users filter sidecars by. */
const proxy: Schema = {
  DestinationServiceName: 'string',
  DestinationServiceID: 'string',
  LocalServiceAddress: 'string',
  LocalServicePort: 'int',
  Mode: 'string',
  MeshGateway: { struct: { Mode: 'string' } },
  Expose: { struct: { Checks: 'bool' } },
};

const connect: Schema = { Native: 'bool' };

/** A check record: agent/checks, health/node, health/checks, health/state. */
export const checkSchema: Schema = frozen({
  Node: 'string',
  CheckID: 'string',
  Name: 'string',
  Status: 'string',
  Notes: 'string',
  Output: 'string',
  ServiceID: 'string',
  ServiceName: 'string',
  ServiceTags: 'stringList',
  Type: 'string',
  Interval: 'string',
  Timeout: 'string',
  ExposedPort: 'int',
});

/** A service as health/service embeds it (no Datacenter: Consul does not filter on it). */
const service: Schema = {
  ID: 'string',
  Service: 'string',
  Kind: 'string',
  Tags: 'stringList',
  Address: 'string',
  Meta: 'stringMap',
  Port: 'int',
  Weights: { struct: weights },
  EnableTagOverride: 'bool',
  TaggedAddresses: 'stringMap',
  Proxy: { struct: proxy },
  Connect: { struct: connect },
};

/** A service of agent/services (filtered per map value; the keys are kept). */
export const agentServiceSchema: Schema = frozen({ ...service });

/** A node: catalog/nodes, and the Node of a health entry. */
export const nodeSchema: Schema = frozen({
  ID: 'string',
  Node: 'string',
  Address: 'string',
  Datacenter: 'string',
  TaggedAddresses: 'stringMap',
  Meta: 'stringMap',
});

/** An entry of health/service: Checks.X is true when any one check satisfies X. */
export const healthEntrySchema: Schema = frozen({
  Node: { struct: { ...nodeSchema } },
  Service: { struct: { ...service } },
  Checks: { structList: { ...checkSchema } },
});

/** A ServiceNode of catalog/service/{name}. */
export const catalogServiceSchema: Schema = frozen({
  ID: 'string',
  Node: 'string',
  Address: 'string',
  Datacenter: 'string',
  TaggedAddresses: 'stringMap',
  NodeMeta: 'stringMap',
  ServiceKind: 'string',
  ServiceID: 'string',
  ServiceName: 'string',
  ServiceTags: 'stringList',
  ServiceAddress: 'string',
  ServiceTaggedAddresses: 'stringMap',
  ServiceMeta: 'stringMap',
  ServicePort: 'int',
  ServiceWeights: { struct: weights },
  ServiceEnableTagOverride: 'bool',
  ServiceProxy: { struct: proxy },
  ServiceConnect: { struct: connect },
});

/**
 * A member of agent/members. Consul's Addr is a net.IP (a byte slice to bexpr); here it is the
 * string the JSON shows. Port and the protocol/delegate versions are unsigned, Status is an int.
 */
export const memberSchema: Schema = frozen({
  Name: 'string',
  Addr: 'string',
  Port: 'uint',
  Tags: 'stringMap',
  Status: 'int',
  ProtocolMin: 'uint',
  ProtocolMax: 'uint',
  ProtocolCur: 'uint',
  DelegateMin: 'uint',
  DelegateMax: 'uint',
  DelegateCur: 'uint',
});
