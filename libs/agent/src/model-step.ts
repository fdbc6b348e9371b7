import type { DomainEvent } from '@rudder/contracts';
import { ownCallIds } from './call-ids';
import { compactionDue } from './context';
import { checkAnswer, REASKS_SPENT } from './output-guard';
import { requestParts, sentRequest } from './request';
import type { RunTurnOptions, StoredTurn } from './run-options';
import { sameMessages, type Speculation } from './speculation';
import { endTurn, evolveTurn, type TurnState } from './turn';

/**
 * Asks the model for step `step` and stores its reply: with `turn.ended` when it calls no tool,
 * else with its calls started. A turn whose request cannot fit its budget (`fitRequest`) ends
 * `failed`, saying so, without asking.
 *
 * An agent's output guard (`Agent.outputGuard`) checks a reply that calls no tool first: its
 * tokens are held (not given to `onToken`) until then, and sent only when it passes (a reply
 * with calls sends them once it is whole). A rejected answer is stored as `answer.rejected`:
 * alone when the model is asked again (a step: the store takes the steers waiting there), with
 * the turn's end, `refused`, when it was blocked or the turn's re-asks are spent. A guard that
 * failed every try ends the turn `failed`, its answer not stored.
 */
export async function requestModel(turn: TurnState, step: number, options: RunTurnOptions, speculation: Speculation | null = null): Promise<StoredTurn> {
  const { agent, model, commit, signal } = options;
  try {
    await options.beforeModelRequest?.();
    signal.throwIfAborted();
  } catch (error) {
    speculation?.abort();
    throw error;
  }
  const { tools, parts } = requestParts(turn, options);
  const keep = options.compact ? compactionDue(parts, agent.context) : null;
  if (keep !== null) {
    speculation?.abort();
    // A step of its own: what it stored (and the steers its commit took) is read before the request.
    const compacted = await options.compact!({ turn, step, keep });
    if (compacted) return compacted;
  }
  const request = sentRequest(turn, parts, options);
  const same = speculation !== null && request.fits && speculation.step === step && speculation.tools === tools && sameMessages(speculation.messages, request.messages);
  if (!same) speculation?.abort();
  if (!request.fits) return commit(endTurn(turn, 'failed', request.outcome));
  const guard = agent.outputGuard;
  const held: string[] = [];
  const onToken = guard ? (text: string) => void held.push(text) : (text: string) => options.onToken?.(step, text);
  let reply;
  try {
    reply = same ? await speculation.use(onToken) : await model.reply({ messages: request.messages, tools, signal, onToken });
  } catch (error) {
    if (signal.aborted) throw error;
    return commit(endTurn(turn, 'failed', `the model failed: ${describe(error)}`));
  }
  // A reply that came back after the abort may be only a part of one (the `openai` package ends
  // an aborted stream as if it were complete; an agent's own client may do the same).
  signal.throwIfAborted();
  // What it carried, as the model counted it when it says so, else as the budget does.
  const carried = { tokens: reply.usage?.promptTokens ?? Math.ceil(request.tokens * agent.context.usage.value), maxTokens: agent.context.maxTokens };
  if (reply.usage) agent.context.usage.observe(request.tokens, reply.usage.promptTokens);
  const toolCalls = ownCallIds(reply.toolCalls, step);
  const measured = { ...(reply.usage ? { usage: reply.usage } : {}), carried };
  if (guard && toolCalls.length === 0) {
    const verdict = await checkAnswer(guard, reply.content, { conversation: options.conversation, turn, signal });
    if (verdict !== 'pass') {
      if ('failed' in verdict) return commit(endTurn(turn, 'failed', verdict.failed));
      const reask = 'reask' in verdict && turn.rejected.length < guard.maxReasks ? turn.rejected.length + 1 : null;
      const feedback = 'reask' in verdict ? (reask === null ? REASKS_SPENT : verdict.reask) : verdict.block;
      const rejected: DomainEvent = { type: 'answer.rejected', data: { turn: turn.id, step, answer: reply.content, feedback, reask, ...measured } };
      // Refused: the block's message is what the turn answers (`evolveTurn`).
      return commit(reask === null ? [rejected, ...endTurn(evolveTurn(turn, rejected), 'refused', feedback)] : [rejected]);
    }
  }
  for (const text of held) options.onToken?.(step, text);
  const replied: DomainEvent = { type: 'model.replied', data: { turn: turn.id, step, content: reply.content, toolCalls, ...measured } };
  return commit(
    toolCalls.length === 0
      ? // The end it proposes is made from the turn with this reply in it (the store may replace it).
        [replied, ...endTurn(evolveTurn(turn, replied), 'completed', null)]
      : [replied, ...toolCalls.map((call): DomainEvent => ({ type: 'tool.started', data: { turn: turn.id, step, call } }))],
  );
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
