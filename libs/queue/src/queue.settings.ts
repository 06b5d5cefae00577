import { resolveOptions } from './validation/apply-rules';
import { ModuleOptionsRules } from './validation/module-options';
import { assertConnectionShape } from './validation/connection';
import type { QueueModuleOptions } from './interfaces';

/** The module's options after defaults and validation; `connection` stays with RedisConnection. */
export class QueueSettings extends ModuleOptionsRules {
  static resolve(options: QueueModuleOptions): QueueSettings {
    assertConnectionShape(options?.connection);
    const { connection: _connection, ...rest } = options;
    return resolveOptions(QueueSettings, rest, 'QueueModule.forRoot');
  }
}
