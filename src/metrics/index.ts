export { AgentMetrics, entriesBuckets, secondsBuckets } from './agent-metrics.ts';
export type { LogKind, MetricsSources } from './agent-metrics.ts';
export type { ConsulMetrics, ConsulGauge, ConsulSampled } from './consul-json.ts';
