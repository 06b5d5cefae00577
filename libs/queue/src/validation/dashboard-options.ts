import { IsInt, IsString, Matches, Max, Min } from 'class-validator';
import type { QueueDashboardOptions } from '../interfaces';
import { DASHBOARD_DEFAULTS } from '../queue.defaults';
import type { SameKeys } from './apply-rules';

/** The guard is no rule's business: QueueDashboardModule uses it as given. */
type DashboardOptions = Omit<QueueDashboardOptions, 'guard'>;

export class DashboardOptionsRules
  implements Required<DashboardOptions>, SameKeys<DashboardOptions, DashboardOptionsRules>
{
  @IsString()
  @Matches(/^[A-Za-z0-9._~\-/]*$/, { message: 'path must be a plain URL path (got "$value")' })
  path: string = DASHBOARD_DEFAULTS.path;

  @IsInt()
  @Min(1)
  @Max(1000)
  hottestGroups: number = DASHBOARD_DEFAULTS.hottestGroups;

  @IsInt()
  @Min(1)
  @Max(1000)
  upcomingTasks: number = DASHBOARD_DEFAULTS.upcomingTasks;

  @IsInt()
  @Min(1)
  @Max(1000)
  deadLetters: number = DASHBOARD_DEFAULTS.deadLetters;
}
