import { isStorableText, type DomainEvent, type ToolCall } from '@rudder/contracts';
import type { ModelMessage } from './messages';
import type { ModelClient } from './model';
import { runToolCall, type Tool } from './tools';
import { endTurn, evolveTurn, nextAction, type TurnState } from './turn';

export type Agent = {
  systemPrompt: string;
  tools: readonly Tool[];
  /** A turn fails rather than asking the model more than this many times. */
  maxSteps: number;
};

export type RunTurnOptions = {
  /** The conversation's key, for the tools' context. */
  conversation: string;
  agent: Agent;
  model: ModelClient;
  /** The conversation before this turn: earlier turns as their prompts and answers. */
  history: readonly ModelMessage[];
  turn: TurnState;
  /**
   * Stores events of the turn durably, in one transaction, and answers what was stored: the
   * store may add to them (steered messages taken at a step) or replace the turn's end (a
   * steer landed while the model wrote its final answer: the turn takes one more step). The
   * loop goes on only after it resolves; a rejection ends the run and the turn resumes from
   * what was stored.
   */
  commit(events: DomainEvent[]): Promise<DomainEvent[]>;
  onToken?: (step: number, text: string) => void;
  /**
   * Runs before each model request. A rejection ends the run before the request is sent,
   * nothing stored, as a commit's does (the turn resumes from what was stored): the worker
   * checks there that it still owns the conversation after a pause.
   */
  beforeModelRequest?: () => Promise<void>;
  /** Aborting stops the model request and the tools in flight; nothing more is stored. */
  signal: AbortSignal;
};

/**
 * Drives one turn to its end: ask the model, store its reply, run its tool calls and store
 * each result, repeat; the reply without tool calls ends the turn, stored with `turn.ended`
 * in the same commit. A model that fails for good (after the client's retries) ends the turn
 * as `failed`. Returns the turn as it ended.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnState> {
  const { agent, model, history, commit, signal } = options;
  let turn = options.turn;
  /** Stores events; true when what was stored ended the turn. */
  const store = async (events: DomainEvent[]) => {
    const stored = await commit(events);
    turn = stored.reduce(evolveTurn, turn);
    return stored.some((e) => e.type === 'turn.ended');
  };

  for (;;) {
    signal.throwIfAborted();
    const action = nextAction(turn, agent);
    switch (action.type) {
      case 'end':
        if (await store(endTurn(turn, action.status, action.outcome))) return turn;
        break;

      case 'request-model': {
        await options.beforeModelRequest?.();
        signal.throwIfAborted();
        let reply;
        try {
          reply = await model.reply({
            messages: [{ role: 'system', content: agent.systemPrompt }, ...history, ...turn.messages],
            tools: agent.tools,
            signal,
            onToken: (text) => options.onToken?.(action.step, text),
          });
        } catch (error) {
          if (signal.aborted) throw error;
          if (await store(endTurn(turn, 'failed', `the model failed: ${describe(error)}`))) return turn;
          break;
        }
        // A reply that came back after the abort may be only a part of one (the `openai` package ends
        // an aborted stream as if it were complete; an agent's own client may do the same).
        signal.throwIfAborted();
        const toolCalls = ownCallIds(reply.toolCalls, action.step);
        const replied: DomainEvent = {
          type: 'model.replied',
          data: { turn: turn.id, step: action.step, content: reply.content, toolCalls, ...(reply.usage ? { usage: reply.usage } : {}) },
        };
        const ended = await store(
          toolCalls.length === 0
            ? [replied, ...endTurn(evolveTurn(turn, replied), 'completed', null)]
            : [replied, ...toolCalls.map((call): DomainEvent => ({ type: 'tool.started', data: { turn: turn.id, step: action.step, call } }))],
        );
        if (ended) return turn;
        break;
      }

      case 'run-tools': {
        // The calls run side by side; each result is stored as soon as it is known, one commit at a time.
        // The store may end the turn with the last result (it was interrupted at this step).
        let stored = Promise.resolve();
        let ended = false;
        await Promise.all(
          action.calls.map(async (call) => {
            const context = { conversation: options.conversation, turn: turn.id, callId: call.id, subject: turn.prompt.subject, signal };
            const { result, isError } = await runToolCall(agent.tools, call, context);
            stored = stored.then(async () => {
              ended ||= await store([{ type: 'tool.ended', data: { turn: turn.id, step: action.step, callId: call.id, name: call.name, result, isError } }]);
            });
            await stored;
          }),
        );
        if (ended) return turn;
        break;
      }

      default: {
        const never: never = action;
        throw new Error(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }
}

/**
 * Call ids come from the model, and each must name one call of its step: it is the call's once
 * key in the log and the id its result answers. An id that is empty, repeated within the
 * reply, over-long or not storable is replaced by `call_<step>_<index>` (in the stored reply
 * too, so the model reads its calls and their results under the same ids).
 */
export function ownCallIds(calls: readonly ToolCall[], step: number): ToolCall[] {
  const seen = new Set<string>();
  return calls.map((call, index) => {
    let id = call.id;
    if (id === '' || id.length > 200 || !isStorableText(id) || seen.has(id)) {
      id = `call_${step}_${index}`;
      while (seen.has(id) || calls.some((c) => c.id === id)) id += '_';
    }
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
