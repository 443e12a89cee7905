/**
 * Consul's ?filter= language (go-bexpr v0.1.2, spec consul-compat.md §5): compile an expression
 * against an endpoint's selector schema once, then apply the predicate to each rendered record.
 * Callers skip an empty `filter` as Consul does; any compile error is a FilterError (Consul: 500).
 */
export { compileFilter, type FilterPredicate, type FilterWork } from './compile.ts';
export { filterClausesMax, FilterError, type FilterPosition } from './errors.ts';
export {
  agentServiceSchema,
  catalogServiceSchema,
  checkSchema,
  healthEntrySchema,
  memberSchema,
  nodeSchema,
  type FieldType,
  type Schema,
} from './schema.ts';
