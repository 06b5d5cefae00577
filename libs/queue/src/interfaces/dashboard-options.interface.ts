import type { CanActivate, Type } from '@nestjs/common';

/** Decides whether a request may see (and act on) the dashboard. */
export type DashboardGuard =
  | Type<CanActivate>
  | CanActivate
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a guard typed with the framework's own request class must be assignable
  | ((request: any) => boolean | Promise<boolean>);

export interface QueueDashboardOptions {
  /** Where the page is served; its JSON API lives below it (`<path>/api`). Default: `QUEUE_DEFAULTS.dashboard.path`. */
  path?: string;
  /**
   * Protects every route of the dashboard, the page as well as the API (a guard class, a guard
   * instance, or a function of the request). Without one, anyone who reaches the application can see
   * queue names, group names, task ids and errors, and re-queue dead tasks.
   */
  guard?: DashboardGuard;
  /** Groups listed per FixedQueue. Default: `QUEUE_DEFAULTS.dashboard.hottestGroups`. */
  hottestGroups?: number;
  /** Upcoming tasks listed per DelayQueue. Default: `QUEUE_DEFAULTS.dashboard.upcomingTasks`. */
  upcomingTasks?: number;
  /** Dead tasks listed per DelayQueue, dead batches per at-least-once FixedQueue. Default: `QUEUE_DEFAULTS.dashboard.deadLetters`. */
  deadLetters?: number;
}
