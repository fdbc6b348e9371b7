import { createLog, readConfig } from '@rudder/runtime';
import { startCompanion } from './start-companion';

const log = createLog('companion');

try {
  const companion = await startCompanion(readConfig(), { log });
  log.info('companion is up', { port: companion.port });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    companion.stop().then(
      () => process.exit(0),
      (error) => {
        log.error('stopping failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (error) {
  log.error('companion failed to start', { error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
