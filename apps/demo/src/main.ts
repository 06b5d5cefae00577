import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { loadDemoConfig } from './demo.config';
import { startDemo } from './demo.app';
import { ReportSink } from './games/upstream/report-sink';
import { StoryLogger } from './story.logger';

/**
 * A clean stop talks to Redis; when Redis went first (a terminal's Ctrl-C reaches it too) every
 * command is retried for a long while, and Nest ignores a second Ctrl-C meanwhile.
 */
const STOP_GRACE_MS = 5_000;

function exitIfStuck(logger: Logger): void {
  setTimeout(() => {
    logger.error(`still stopping after ${STOP_GRACE_MS / 1000} s (is Redis gone?): exiting without waiting further`);
    process.exit(1);
  }, STOP_GRACE_MS).unref();
}

async function main(): Promise<void> {
  const config = loadDemoConfig(process.env);
  const logger = new Logger('Demo');
  const app = await startDemo(config, new StoryLogger({ logLevels: ['log', 'warn', 'error', 'fatal'] }));
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => exitIfStuck(logger));
  const api = await app.getUrl();
  logger.log(`API on ${api}: try  curl -s ${api}/games/stats?top=5  or  curl -s ${api}/pets/milo`);
  logger.log(`dashboard of every queue: ${api}/queues`);
  logger.log(`upstream reporting service (stand-in) on ${app.get(ReportSink).url}/reports`);
  if (config.durationS !== undefined) {
    setTimeout(() => {
      logger.log(`${config.durationS} s are up (DEMO_DURATION_S): stopping`);
      exitIfStuck(logger);
      app.close().then(
        () => process.exit(0),
        (error: Error) => {
          logger.error(`could not stop cleanly: ${error.message}`);
          process.exit(1);
        },
      );
    }, config.durationS * 1000);
  }
}

main().catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});
