import { IsBoolean, IsIn, IsInt, IsString, Matches, Max, Min } from 'class-validator';
import type { QueueModuleOptions } from '../interfaces';
import { MODULE_DEFAULTS } from '../queue.defaults';
import type { SameKeys } from './apply-rules';
import { DATA_CONTRACT, SERVES_FROM } from '../redis/data-contract';

/** `connection` is checked apart (assertConnectionShape): it becomes a client, not a setting. */
type ModuleOptions = Omit<QueueModuleOptions, 'connection'>;

export class ModuleOptionsRules implements Required<ModuleOptions>, SameKeys<ModuleOptions, ModuleOptionsRules> {
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, { message: 'prefix must be 1-64 characters of letters, digits, ".", "_" or "-"' })
  prefix: string = MODULE_DEFAULTS.prefix;

  @IsBoolean()
  consumers: boolean = MODULE_DEFAULTS.consumers;

  @IsInt()
  @Min(0)
  shutdownTimeoutMs: number = MODULE_DEFAULTS.shutdownTimeoutMs;

  @IsInt()
  @Min(10)
  @Max(60_000)
  idlePollMs: number = MODULE_DEFAULTS.idlePollMs;

  @IsInt()
  @Min(16)
  @Max(512 * 1024 * 1024)
  maxPayloadBytes: number = MODULE_DEFAULTS.maxPayloadBytes;

  @IsInt()
  @Min(100)
  @Max(600_000)
  commandTimeoutMs: number = MODULE_DEFAULTS.commandTimeoutMs;

  @IsIn(['fail', 'continue'])
  startup = MODULE_DEFAULTS.startup;

  @IsIn(['warn', 'fail'])
  evictionPolicy = MODULE_DEFAULTS.evictionPolicy;

  @IsIn(['auto', ...Array.from({ length: DATA_CONTRACT - SERVES_FROM + 1 }, (_, n) => SERVES_FROM + n)], {
    message: `dataContract must be 'auto' or a data contract this version speaks: ${SERVES_FROM} to ${DATA_CONTRACT}`,
  })
  dataContract = MODULE_DEFAULTS.dataContract;

  @IsBoolean()
  tracing: boolean = MODULE_DEFAULTS.tracing;
}
