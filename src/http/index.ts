import type { ApiContext } from './api.ts';
import { agentRoutes } from './routes/agent.ts';
import { agentOpsRoutes } from './routes/agent-ops.ts';
import { agentServiceRoutes } from './routes/agent-service.ts';
import { debugRoutes } from './routes/debug.ts';
import { catalogRoutes } from './routes/catalog.ts';
import { healthRoutes } from './routes/health.ts';
import { kvRoutes } from './routes/kv.ts';
import { lockInfoRoutes } from './routes/lock-info.ts';
import { maintenanceRoutes } from './routes/maintenance.ts';
import { monitorRoutes } from './routes/monitor.ts';
import { operatorRoutes } from './routes/operator.ts';
import { sessionRoutes } from './routes/session.ts';
import { snapshotRoutes } from './routes/snapshot.ts';
import { streamProbeRoutes } from './routes/stream-probe.ts';
import { txnRoutes } from './routes/txn.ts';
import { uiRoutes } from './routes/ui.ts';
import type { Dialect } from './render.ts';
import { Router } from './router.ts';

export type { AgentOperations, ApiContext, LogRedaction, LogSource, MonitorLevel, ProfileSource } from './api.ts';
export { monitorLevels } from './api.ts';
export { startHttpServer, loadUws } from './server.ts';
export { BindingUnavailable } from './binding-error.ts';
export { StreamServer, streamSubprotocol } from './stream.ts';
export { RateLimiter } from './rate-limit.ts';
export { hostCheck } from './allowed-hosts.ts';
export type { StreamOptions } from './stream.ts';
export type { HttpServer, HttpServerOptions } from './server.ts';
export { dialects } from './render.ts';
export type { Dialect } from './render.ts';

/** The /v1 API and the dashboard's files: every route of the agent in one table. */
export const apiRoutes = [
  ...sessionRoutes, ...kvRoutes, ...txnRoutes, ...agentRoutes, ...agentOpsRoutes, ...monitorRoutes, ...debugRoutes, ...maintenanceRoutes, ...operatorRoutes, ...snapshotRoutes,
  ...healthRoutes, ...agentServiceRoutes, ...catalogRoutes, ...lockInfoRoutes, ...streamProbeRoutes, ...uiRoutes,
];

/** The router of the /v1 API; the consul dialect keeps a final `/` in a route's parameter, as Consul's router does. */
export function apiRouter(dialect: Dialect = 'seed'): Router<ApiContext> {
  const router = new Router<ApiContext>({ slashEndsNames: dialect === 'seed' });
  for (const route of apiRoutes) router.add(route);
  return router;
}
