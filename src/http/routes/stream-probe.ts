/**
 * `GET /v1/stream` without an upgrade: the verdict the upgrade would give the same request's token. A
 * browser cannot read the status of a refused WebSocket upgrade (it sees a connection closed with 1006),
 * so the dashboard asks this once when its stream fails to open. The gate authenticates the token as the
 * upgrade does (the same bearer sources; 401 for none, an invalid or an expired one); then the upgrade's
 * own judgement (stream-upgrade.ts) answers 403 for a token whose rules read nothing a topic shows, and,
 * without authentication, for a page of another origin. Anything else is 426 Upgrade Required, saying to
 * upgrade to WebSocket (the connection caps are not judged here: they change from one moment to the next).
 */
import { RegistryError } from '../../domain/errors.ts';
import type { ApiContext } from '../api.ts';
import type { Reply } from '../reply.ts';
import type { Request } from '../request.ts';
import type { Route } from '../router.ts';
import { foreignOrigin, tokenRefusal, websocketVersion } from '../stream-upgrade.ts';

function streamVerdict(req: Request): Reply {
  const foreign = req.identity === undefined ? foreignOrigin(req.headers) : undefined;
  if (foreign !== undefined) throw new RegistryError('streamOriginRefused', { origin: foreign });
  throw tokenRefusal(req.identity) ?? new RegistryError('streamUpgradeRequired', { version: websocketVersion });
}

export const streamProbeRoutes: Route<ApiContext>[] = [
  { path: '/v1/stream', prefix: false, methods: { GET: streamVerdict } },
];
