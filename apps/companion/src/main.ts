import { createLog, readConfig } from '@rudder/runtime';
import { startCompanion } from './start-companion';

const log = createLog('companion');
try {
  const companion = await startCompanion(readConfig(), { log, shutdownHooks: true });
  log.info('companion is up', { port: companion.port });
} catch (error) {
  log.error('companion failed to start', { error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
