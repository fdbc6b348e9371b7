import { readConfig } from '@rudder/runtime';
import { startWorker } from './worker';

const worker = await startWorker(readConfig());
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    worker.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
