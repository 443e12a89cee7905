/** The agent's own gRPC health (`""`), asked once over a connection of its own: a status, or `error <code>`. */
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import type { Agent } from './agent.ts';

type HealthClient = grpc.Client & { check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void };
const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');

export function processHealth(agent: Agent): Promise<string> {
  const client = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
  return new Promise((resolve) => client.check({ service: '' }, (err, res) => {
    client.close();
    resolve(err ? `error ${err.code}` : res!.status);
  }));
}
