import type { RunTurnOptions, StoredTurn } from './run-options';
import { handedOff } from './handoffs';
import { requestModel } from './model-step';
import type { Ahead } from './speculation';
import { runTools } from './tool-step';
import { endTurn, nextAction, type TurnState } from './turn';

/**
 * Drives one turn to its end: ask the model, store its reply, run its tool calls and store
 * each result, repeat; the reply without tool calls ends the turn, stored with `turn.ended`
 * in the same commit. A model that fails for good (after the client's retries) ends the turn
 * as `failed`. Returns the turn as it ended — or as it parked, when every call left waits for
 * a person's approval (`parked`): the run ends there, holding nothing, and a decision stored
 * later starts a new one from the log. A step that handed the conversation to another agent
 * (a call of a built-in `transfer_to_<name>` tool, handoffs.ts) ends the run too, once all its
 * results are stored: the runner runs the rest of the turn with the agent it was handed to.
 *
 * Its steps: asking the model (`requestModel`, model-step.ts), running the calls
 * (`runTools`, tool-step.ts), and the next request sent ahead of a step's last commit
 * (`Speculation`, speculation.ts). What a request carries is request.ts's.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnState> {
  let stored: StoredTurn = { turn: options.turn, ended: false };
  const ahead: Ahead = { speculation: null };
  try {
    while (!stored.ended && !stored.parked && !handedOff(stored.turn, options.agent)) stored = await takeStep(stored.turn, options, ahead);
  } finally {
    ahead.speculation?.abort();
  }
  return stored.turn;
}

/** What the turn as stored does next (`nextAction`), up to and including its commit; answers that commit's answer. */
async function takeStep(turn: TurnState, options: RunTurnOptions, ahead: Ahead): Promise<StoredTurn> {
  const speculation = ahead.speculation;
  ahead.speculation = null;
  options.signal.throwIfAborted();
  const action = nextAction(turn, options.agent);
  if (action.type !== 'request-model') speculation?.abort();
  switch (action.type) {
    case 'end':
      return options.commit(endTurn(turn, action.status, action.outcome));
    case 'park':
      return { turn, ended: false, parked: true };
    case 'request-model':
      return requestModel(turn, action.step, options, speculation);
    case 'run-tools':
      return runTools(turn, { step: action.step, at: options.now() }, action.calls, options, ahead);
    default: {
      const never: never = action;
      throw new Error(`unknown action ${JSON.stringify(never)}`);
    }
  }
}
