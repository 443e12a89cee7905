/**
 * Loads proto/grpc/health/v1/health.proto once. The options match the ones grpc-health-check's client
 * uses (keepCase, enums as strings, defaults), so both sides speak `{ status: 'SERVING' }`.
 */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

export const healthProtoPath = fileURLToPath(new URL('../../proto/grpc/health/v1/health.proto', import.meta.url));
export const healthServiceName = 'grpc.health.v1.Health';

let cached: ServiceDefinition | undefined;

/** The Health service definition; throws at start when the proto is missing or broken. */
export function healthServiceDefinition(): ServiceDefinition {
  if (cached) return cached;
  const definitions = loadSync(healthProtoPath, { keepCase: true, enums: String, defaults: true, longs: String, oneofs: true });
  const service = definitions[healthServiceName];
  if (!service || !('Check' in service) || !('Watch' in service) || !('List' in service)) {
    throw new Error(`${healthProtoPath} does not define ${healthServiceName} with Check, Watch and List`);
  }
  cached = service as unknown as ServiceDefinition;
  return cached;
}
