import { RudderError } from '@rudder/client';
import { byId, el } from './dom';

/**
 * Writes what a control answered (landed or not, queue full, forbidden…) at the top of the
 * answers list: `text` says what it did, or in plain words why it was refused (else the API's message).
 */
export function answered(what: string, error: unknown, text?: string) {
  const line =
    error === undefined
      ? el('li', { class: 'ok', 'data-control': what.split(' ')[0] }, el('b', {}, what), `: ${text}`)
      : error instanceof RudderError
        ? el(
            'li',
            { class: 'refused', 'data-control': what.split(' ')[0], 'data-code': error.code },
            el('b', {}, what),
            `: ${error.status} ${error.code.replace(/_/g, ' ')} — ${text ?? error.message}${error.retryAfterSeconds ? ` (retry in ${error.retryAfterSeconds} s)` : ''}`,
          )
        : el('li', { class: 'refused', 'data-control': what.split(' ')[0] }, el('b', {}, what), `: ${String(error)}`);
  byId('answers').prepend(line);
}
