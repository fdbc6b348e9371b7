import { isDeepStrictEqual } from 'node:util';
import { compactionDue } from './context';
import type { ModelMessage } from './messages';
import type { ModelClient } from './model';
import { requestParts, sentRequest } from './request';
import type { RunTurnOptions } from './run-options';
import type { Tool } from './tools';
import { nextAction, type TurnState } from './turn';

/**
 * The next step's model request, sent while the commit of the step's last tool result is in
 * flight (else a one-tool turn waits a commit's round trip more). It is used only when the
 * request made from the turn as stored is the same request (the same step, tools and messages):
 * a commit that took a steer, or ended the turn, makes it be aborted and thrown away, and its
 * tokens with it (they are held until it is used).
 */
export type Speculation = {
  step: number;
  tools: readonly Tool[];
  /** The request's messages: compared with the request made from the stored turn (`sameMessages`). */
  messages: readonly ModelMessage[];
  /** Its reply; once used, its held tokens go to `onToken` first and the rest as they come (the step's own sink: a guarded agent's holds them still). */
  use(onToken: (text: string) => void): Promise<Awaited<ReturnType<ModelClient['reply']>>>;
  abort(): void;
};

/** The request a step sent ahead of its commit, for the next step to use or throw away. */
export type Ahead = { speculation: Speculation | null };

/**
 * Sends the model request of `turn` (the turn as the step's commit is expected to store it)
 * ahead of that commit, when the conversation is quiet and the request needs no compaction and
 * fits; null otherwise. Its tokens are held until it is used.
 */
export function speculate(turn: TurnState, options: RunTurnOptions): Speculation | null {
  const { agent, model } = options;
  if (!options.quiet?.()) return null;
  const action = nextAction(turn, agent);
  if (action.type !== 'request-model') return null;
  const { tools, parts } = requestParts(turn, options);
  if (options.compact && compactionDue(parts, agent.context) !== null) return null;
  const request = sentRequest(turn, parts, options);
  if (!request.fits) return null;
  const aborted = new AbortController();
  const signal = AbortSignal.any([options.signal, aborted.signal]);
  const held: string[] = [];
  let forward: ((text: string) => void) | null = null;
  const reply = (async () => {
    // Never a request a worker that lost the conversation would send (the same check as every request's).
    await options.beforeModelRequest?.();
    signal.throwIfAborted();
    return model.reply({ messages: request.messages, tools, signal, onToken: (text) => (forward ? forward(text) : held.push(text)) });
  })();
  reply.catch(() => undefined); // awaited only when used
  let settled = false;
  return {
    step: action.step,
    tools,
    messages: request.messages,
    use(onToken) {
      settled = true;
      options.onAhead?.('used');
      forward = onToken;
      for (const text of held.splice(0)) forward(text);
      return reply;
    },
    abort() {
      if (settled) return;
      settled = true;
      options.onAhead?.('discarded');
      aborted.abort(new Error('the request made ahead of the commit was not the one to make'));
    },
  };
}

/**
 * Whether two requests carry the same messages. The stored turn's messages are mostly the very
 * objects the request sent ahead was made of (a commit appends to the turn), so those compare by
 * identity and only the others (the step's results, the head) by value: a walk over the
 * messages, not the JSON of the whole context twice.
 */
export function sameMessages(a: readonly ModelMessage[], b: readonly ModelMessage[]): boolean {
  return a.length === b.length && a.every((message, i) => message === b[i] || isDeepStrictEqual(message, b[i]));
}
