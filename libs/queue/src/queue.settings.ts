import { QueueConfigError } from './errors';
import { ModuleOptionsRules, resolveOptions } from './validation/queue-options';
import type { QueueModuleOptions } from './interfaces';

/** The module's options after defaults and validation; `connection` stays with RedisConnection. */
export class QueueSettings extends ModuleOptionsRules {
  static resolve(options: QueueModuleOptions): QueueSettings {
    if (options?.connection === undefined || options.connection === null) {
      throw new QueueConfigError(
        'Invalid options for QueueModule.forRoot: connection is required (a redis:// URL, ioredis options, { cluster: nodes } or an ioredis client)',
      );
    }
    const { connection: _connection, ...rest } = options;
    return resolveOptions(QueueSettings, rest, 'QueueModule.forRoot');
  }
}
