import { createLog, readConfig } from '@rudder/runtime';
import { startGateway } from './index';

/** `npm run start:gateway`: one gateway, configured by the environment; SIGTERM/SIGINT stop it cleanly (exit 0). */
const log = createLog('gateway');
try {
  const gateway = await startGateway(readConfig());
  log.info(`gateway listening on ${gateway.url}`);
  const stop = (signal: NodeJS.Signals) => {
    log.info(`${signal}: stopping`);
    gateway.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('stopping failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (error) {
  log.error('gateway failed to start', { error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}
