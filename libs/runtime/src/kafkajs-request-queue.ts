import { createRequire } from 'node:module';

/**
 * Mends kafkajs 2.2.4's request queue, which checks for pending requests every millisecond for
 * as long as a connection lives (upstream kafkajs issues tulios/kafkajs#1556 and
 * tulios/kafkajs#1704; upstream's fix, tulios/kafkajs#1667, was never released). Each response calls `checkPendingRequests`, which schedules the next check with
 * `setTimeout(throttledUntil - Date.now())`: not throttled, that is a negative delay, so 1 ms,
 * and the check schedules itself again, with nothing pending, forever. Every broker connection
 * of every client spins such a timer: measured on an idle `npm start`, the gateway used 4 % of a
 * core with it and 1.4 % without, the companion 2.6 % and 1.5 % (docs/performance.md).
 *
 * Mended as upstream's tulios/kafkajs#1667 does: a check is scheduled only while requests are pending (throttled, or
 * over the in-flight limit). Nothing else calls for one: `push` schedules a check when it
 * enqueues a request, and each response and each timeout checks at once.
 *
 * Applied to the queue's prototype, which every client of this process shares, when this module
 * is loaded (`createKafka` imports it), and only to the version it was written for: another
 * version is left as it is, and `kafkajs-request-queue.unit.spec.ts` fails until this is looked
 * at again. The services run kafkajs from node_modules in every form (`npm start`, the image's
 * bundles keep third-party packages external), so a patch of the installed files would not do.
 */
const require = createRequire(import.meta.url);
const MENDED_VERSION = '2.2.4';
const CHECK_PENDING_REQUESTS_INTERVAL = 10; // kafkajs' own, for a queue that is over its in-flight limit

type RequestQueue = {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
};

/** Whether the installed kafkajs has the mended queue (false: another version, left as it is). */
export const kafkajsRequestQueueMended: boolean = mend();

function mend(): boolean {
  const { version } = require('kafkajs/package.json') as { version: string };
  if (version !== MENDED_VERSION) return false;
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueue };
  RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue) {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const untilUnthrottled = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL,
    );
  };
  return true;
}
