/**
 * Loads proto/grpc/health/v1/health.proto once. The options match the ones grpc-health-check's client
 * uses (keepCase, enums as strings, defaults), so both sides speak `{ status: 'SERVING' }`.
 */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { wireProblem, type StringFields } from './wire-check.ts';

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
  cached = withRequestChecks(service as unknown as ServiceDefinition);
  return cached;
}

/** The string fields of each method's request message (HealthCheckRequest.service = 1; HealthListRequest has none). */
const requestStringFields: Record<string, StringFields> = { Check: new Set([1]), Watch: new Set([1]), List: new Set() };

/** Marks a request whose bytes did not decode; the handler answers INVALID_ARGUMENT with `reason`. */
export const undecodable = Symbol('undecodable request');
export interface Undecodable { [undecodable]: string }

export function undecodableReason(request: unknown): string | undefined {
  return request !== null && typeof request === 'object' && undecodable in request ? (request as Undecodable)[undecodable] : undefined;
}

/**
 * grpc-js answers INTERNAL when a request deserializer throws, though bytes that are not the request
 * message are the caller's fault. Each method's deserializer here returns a marker instead, and the
 * handlers answer it INVALID_ARGUMENT.
 */
function withRequestChecks(definition: ServiceDefinition): ServiceDefinition {
  return Object.fromEntries(Object.entries(definition).map(([name, method]) => {
    const decode = method.requestDeserialize;
    const strings = requestStringFields[name] ?? new Set<number>();
    const refuse = (why: string): Undecodable => ({ [undecodable]: `the ${method.path} request is not a valid protobuf message: ${why}` });
    return [name, {
      ...method,
      requestDeserialize: (bytes: Buffer): unknown => {
        const problem = wireProblem(bytes, strings);
        if (problem !== undefined) return refuse(problem);
        try {
          return decode(bytes);
        } catch (err) {
          return refuse(err instanceof Error ? err.message : String(err));
        }
      },
    }];
  })) as ServiceDefinition;
}
