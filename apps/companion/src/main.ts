import { closeOnSignals, createLog, readConfig } from '@rudder/runtime';
import { startCompanion } from './start-companion';

const log = createLog('companion');
try {
  const companion = await startCompanion(readConfig(), { log });
  log.info('companion is up', { port: companion.port });
  closeOnSignals(() => companion.stop(), log);
} catch (error) {
  log.error('companion failed to start', { error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
