import { type ArgumentsHost, Catch, type ExceptionFilter, HttpStatus } from '@nestjs/common';
import {
  QueueConnectionError,
  QueueInputError,
  QueueInUseError,
  QueueMemoryError,
  QueueReplicationError,
  QueueSchemaError,
  TaskStateError,
  UnknownQueueError,
} from './errors';

type MappedError =
  | QueueInputError
  | TaskStateError
  | QueueInUseError
  | UnknownQueueError
  | QueueConnectionError
  | QueueReplicationError
  | QueueMemoryError;

/** Nest's reason phrases, as its own HttpExceptions put them in `error`. */
const REASONS: Partial<Record<HttpStatus, string>> = {
  [HttpStatus.BAD_REQUEST]: 'Bad Request',
  [HttpStatus.NOT_FOUND]: 'Not Found',
  [HttpStatus.CONFLICT]: 'Conflict',
  [HttpStatus.SERVICE_UNAVAILABLE]: 'Service Unavailable',
};

/** The minimum both Express' response and Fastify's reply offer. */
interface HttpReply {
  status(code: number): HttpReply;
  send(body: unknown): unknown;
}

/**
 * Opt-in mapping of the queues' errors to HTTP responses, for controllers that call the queues with
 * what a client sent: `QueueInputError` / `QueueSchemaError` → 400 (a schema error lists its violations
 * in `message`, as Nest's ValidationPipe does), `TaskStateError` and `QueueInUseError` (obliterate while
 * consumers run) → 409, `UnknownQueueError` → 404, `QueueConnectionError` / `QueueReplicationError` /
 * `QueueMemoryError` (Redis out of memory) → 503. Any other error (a `QueueConfigError`, a
 * Redis refusal, your own) is not caught here and goes on to Nest's handling or your other filters.
 *
 * `app.useGlobalFilters(new QueueExceptionFilter())`, `{ provide: APP_FILTER, useClass: QueueExceptionFilter }`,
 * or `@UseFilters(QueueExceptionFilter)` on a controller. HTTP only (Express or Fastify).
 */
@Catch(
  QueueInputError,
  TaskStateError,
  QueueInUseError,
  UnknownQueueError,
  QueueConnectionError,
  QueueReplicationError,
  QueueMemoryError,
)
export class QueueExceptionFilter implements ExceptionFilter<MappedError> {
  catch(error: MappedError, host: ArgumentsHost): void {
    const status = statusOf(error);
    const body: Record<string, unknown> = {
      statusCode: status,
      message: error instanceof QueueSchemaError ? error.violations : error.message,
      error: REASONS[status],
    };
    if (error instanceof TaskStateError) Object.assign(body, { id: error.id, state: error.state });
    if (error instanceof QueueInUseError) body.consumers = error.consumers;
    // Tells the client whether repeating the request can apply it twice (README: Guarantees), and how
    // often the server tried already (retryMs).
    if (error instanceof QueueConnectionError) Object.assign(body, { outcome: error.outcome, tries: error.tries });
    host.switchToHttp().getResponse<HttpReply>().status(status).send(body);
  }
}

function statusOf(error: MappedError): HttpStatus {
  if (error instanceof QueueInputError) return HttpStatus.BAD_REQUEST;
  if (error instanceof TaskStateError || error instanceof QueueInUseError) return HttpStatus.CONFLICT;
  if (error instanceof UnknownQueueError) return HttpStatus.NOT_FOUND;
  return HttpStatus.SERVICE_UNAVAILABLE;
}
