import IORedis, { Cluster } from 'ioredis';

import { describeValue } from './option-violations';
import { badConnection } from './validation.messages';

const ACCEPTED =
  'a Redis URL string (redis://host:port), ioredis options ({ host, port, … }), ' +
  '{ cluster: nodes, options? } or an existing ioredis client';

/**
 * Refuses a `connection` of a kind ioredis cannot use, before anything reads it as one: a port number
 * would otherwise fail deep inside with `Cannot use 'in' operator`, naming neither the option nor the fix.
 */
export function assertConnectionShape(connection: unknown): void {
  const problem = shapeProblem(connection);
  if (problem) throw badConnection(problem);
}

function shapeProblem(connection: unknown): string | undefined {
  if (connection === undefined || connection === null) return ` is required (${ACCEPTED})`;
  if (typeof connection === 'string')
    return connection.trim() === '' ? ` must be ${ACCEPTED} (got "", a string)` : undefined;
  if (typeof connection === 'number')
    return ` must be ${ACCEPTED} (got ${connection}; for a port, pass { port: ${connection} } or redis://127.0.0.1:${connection})`;
  if (connection === null || typeof connection !== 'object' || Array.isArray(connection))
    return ` must be ${ACCEPTED} (got ${describeValue(connection)})`;
  // A client has a `cluster` method (the CLUSTER command): it is no cluster connection to check.
  if (connection instanceof IORedis || connection instanceof Cluster || !('cluster' in connection)) return undefined;
  const { cluster, options } = connection as { cluster: unknown; options?: unknown };
  if (!Array.isArray(cluster) || cluster.length === 0)
    return `.cluster must be a non-empty array of nodes ("host:port", a port, or { host, port }) (got ${describeValue(cluster)})`;
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options)))
    return `.options must be ioredis cluster options (got ${describeValue(options)})`;
  return undefined;
}
