import {
  type CanActivate,
  Controller,
  type DynamicModule,
  type ExecutionContext,
  ForbiddenException,
  Get,
  Header,
  Headers,
  HttpCode,
  Module,
  NotFoundException,
  Param,
  type Type,
  Post,
  Query,
  Req,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { QueueExceptionFilter } from '../queue-exception.filter';
import { resolveOptions } from '../validation/apply-rules';
import { DashboardOptionsRules } from '../validation/dashboard-options';
import type { DashboardGuard, QueueDashboardOptions, QueueKind } from '../interfaces';
import { DashboardService, type DashboardLimits } from './dashboard.service';
import { DASHBOARD_CSS, DASHBOARD_JS, dashboardPage } from './dashboard.page';
import { escapeHtml, renderSnapshot } from './dashboard.snapshot';

/** Sent by the page's own re-queue calls: a cross-site form cannot set it, so a forged POST is refused. */
const REQUESTED_WITH = 'nrq-dashboard';

/** The page may run only its own script and styles, and talk only to its own API. */
const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function assertFromPage(requestedWith: string | undefined, what = 'Re-queueing'): void {
  if (requestedWith !== REQUESTED_WITH)
    throw new ForbiddenException(`${what} needs the header X-Requested-With: ${REQUESTED_WITH}`);
}

function queueKind(kind: string): QueueKind {
  if (kind !== 'fixed' && kind !== 'delay') throw new NotFoundException(`No queue kind "${kind}": fixed or delay`);
  return kind;
}

/** Adapts a function of the request to a guard. */
class FunctionGuard implements CanActivate {
  constructor(private readonly allow: (request: unknown) => boolean | Promise<boolean>) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    return this.allow(context.switchToHttp().getRequest());
  }
}

function isGuardClass(guard: DashboardGuard): guard is Type<CanActivate> {
  return typeof guard === 'function' && typeof guard.prototype?.canActivate === 'function';
}

/**
 * An opt-in page showing every queue of the application live: throughput and backlog, the hottest
 * groups, paused groups with a resume button, upcoming tasks, dead tasks and dead batches with a re-queue
 * button, a data loss with an acknowledge button. Import it next to `QueueModule`:
 * `QueueDashboardModule.register({ path: 'queues', guard: AdminGuard })`.
 */
@Module({})
export class QueueDashboardModule {
  static register(options: QueueDashboardOptions = {}): DynamicModule {
    // The guard stays out of the rules (class-transformer would copy a guard instance): it is used as given.
    const { path: given, ...limits }: DashboardLimits & { path: string } = resolveOptions(
      DashboardOptionsRules,
      { ...options, guard: undefined },
      'QueueDashboardModule.register',
    );
    const path = given.replace(/^\/+|\/+$/g, '');

    // The path is only known here, and Nest reads a controller's path from its decorator: one class per registration.
    // Redis unreachable is a 503 saying so (and whether a write was applied), not a bare 500: the page shows it.
    @Controller(path)
    @UseFilters(QueueExceptionFilter)
    class QueueDashboardController {
      constructor(private readonly dashboard: DashboardService) {}

      @Get()
      @Header('Content-Type', 'text/html; charset=utf-8')
      @Header('Content-Security-Policy', PAGE_POLICY)
      @Header('X-Content-Type-Options', 'nosniff')
      async page(@Req() request: { originalUrl?: string; url?: string }): Promise<string> {
        // Where the page was reached (global prefix and all), for its script and styles.
        const reached = (request.originalUrl ?? request.url ?? `/${path}`).split('?')[0].replace(/\/+$/, '');
        // Redis unreachable: the page is served all the same, and its script says why it shows nothing.
        const first = await this.dashboard.overview(limits).then(
          (overview) => ({ html: renderSnapshot(overview), time: overview.time }),
          () => undefined,
        );
        return dashboardPage(escapeHtml(reached), first);
      }

      @Get('dashboard.js')
      @Header('Content-Type', 'text/javascript; charset=utf-8')
      @Header('X-Content-Type-Options', 'nosniff')
      script(): string {
        return DASHBOARD_JS;
      }

      @Get('dashboard.css')
      @Header('Content-Type', 'text/css; charset=utf-8')
      @Header('X-Content-Type-Options', 'nosniff')
      styles(): string {
        return DASHBOARD_CSS;
      }

      @Get('api')
      @Header('Cache-Control', 'no-store')
      overview() {
        return this.dashboard.overview(limits);
      }

      @Post('api/delay/:queue/requeue/:id')
      @HttpCode(200)
      requeue(
        @Param('queue') queue: string,
        @Param('id') id: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith);
        return this.dashboard.requeue(queue, id);
      }

      @Post('api/:kind/:queue/pause')
      @HttpCode(200)
      pause(
        @Param('kind') kind: string,
        @Param('queue') queue: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith, 'Pausing');
        return this.dashboard.setPaused(queueKind(kind), queue, true);
      }

      @Post('api/:kind/:queue/resume')
      @HttpCode(200)
      resume(
        @Param('kind') kind: string,
        @Param('queue') queue: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith, 'Resuming');
        return this.dashboard.setPaused(queueKind(kind), queue, false);
      }

      @Post('api/:kind/:queue/acknowledge-data-loss')
      @HttpCode(200)
      acknowledgeDataLoss(
        @Param('kind') kind: string,
        @Param('queue') queue: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith, 'Acknowledging a data loss');
        return this.dashboard.acknowledgeDataLoss(queueKind(kind), queue);
      }

      @Get('api/:kind/:queue/dead')
      @Header('Cache-Control', 'no-store')
      deadPage(@Param('kind') kind: string, @Param('queue') queue: string, @Query('cursor') cursor?: string) {
        if (typeof cursor !== 'string')
          throw new NotFoundException('A page of dead letters needs ?cursor= from the last one');
        return this.dashboard.deadPage(queueKind(kind), queue, cursor, limits.deadLetters);
      }

      @Get('api/fixed/:queue/groups/:group/head')
      @Header('Cache-Control', 'no-store')
      groupHead(@Param('queue') queue: string, @Param('group') group: string) {
        return this.dashboard.groupHead(queue, group);
      }

      @Post('api/fixed/:queue/groups/:group/resume')
      @HttpCode(200)
      resumeGroup(
        @Param('queue') queue: string,
        @Param('group') group: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith, 'Resuming');
        return this.dashboard.resumeGroup(queue, group);
      }

      @Post('api/fixed/:queue/requeue/:id')
      @HttpCode(200)
      requeueBatch(
        @Param('queue') queue: string,
        @Param('id') id: string,
        @Headers('x-requested-with') requestedWith?: string,
      ) {
        assertFromPage(requestedWith);
        return this.dashboard.requeueBatch(queue, id);
      }
    }

    const { guard } = options;
    if (guard)
      UseGuards(isGuardClass(guard) || typeof guard !== 'function' ? guard : new FunctionGuard(guard))(
        QueueDashboardController,
      );

    return {
      module: QueueDashboardModule,
      controllers: [QueueDashboardController],
      providers: [DashboardService],
    };
  }
}
