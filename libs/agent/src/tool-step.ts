import { randomUUID } from 'node:crypto';
import type { DomainEvent, ToolCall } from '@rudder/contracts';
import type { RunTurnOptions, StoredTurn } from './run-options';
import { handoffOf, handOff } from './handoffs';
import { speculate, type Ahead } from './speculation';
import { SCHEDULE_TOOL } from './schedules';
import { changeTodos, TODOS_TOOL } from './todos';
import { needsApproval, runToolCall, type ToolContext, type ToolResult } from './tools';
import { evolveTurn, type CallApproval, type TurnState } from './turn';

/**
 * Runs the step's calls side by side; each result is stored as soon as it is known, one commit
 * at a time. The store may end the turn with the last result (it was interrupted at this step).
 * A call of the built-in `todos` tool is made at its commit, from the plan as the commits before
 * it left it, and stored with its result (`todos.updated`): two calls of one reply change the
 * plan one after the other, and a crash before the commit leaves the plan as it was. A call of
 * the built-in `schedule` tool is stored so too, decided by the runner under the conversation's
 * lock (`scheduleCall`): its result and the schedule it made, changed or cancelled, together. A call of
 * a built-in `transfer_to_<name>` tool is made so too, once every other call of the step is
 * stored (or waits for a person): its result and `agent.changed` are stored together
 * (`handOff`); a later one of the same reply is answered that the first one won.
 *
 * A call whose tool needs approval is not run: `approval.requested` is stored for it, and it
 * waits (the turn parks once nothing else of the step runs). Decided, it runs (approved: with
 * the person's arguments when they edited them, and its result says so) or gets a result that
 * says it was denied; a call still waiting when the turn is asked to end early is closed unrun.
 */
export async function runTools(turn: TurnState, { step, at }: { step: number; at: Date }, calls: readonly ToolCall[], options: RunTurnOptions, ahead: Ahead): Promise<StoredTurn> {
  let stored: Promise<StoredTurn> = Promise.resolve({ turn, ended: false });
  // The step's results as the runs made them: once every call has one (none waited for a person or
  // changed the plan at its commit), the turn its commits store is known before they are done,
  // and the next request can be sent ahead of the last one.
  const results: DomainEvent[] = [];
  const ended = (call: ToolCall, { result, isError }: ToolResult): DomainEvent => ({
    type: 'tool.ended',
    data: { turn: turn.id, step, callId: call.id, name: call.name, result, isError },
  });
  const storeWith = (commit: (before: StoredTurn) => Promise<StoredTurn>) => {
    stored = stored.then(async (before) => {
      const after = await commit(before);
      return before.ended ? before : after;
    });
    return stored;
  };
  const store = (events: (before: StoredTurn) => DomainEvent[]) => storeWith((before) => options.commit(events(before)));
  const transfers = calls.flatMap((call) => {
    const target = handoffOf(options.agent.handoffs, call);
    return target ? [{ call, target }] : [];
  });
  await Promise.all(
    calls.map(async (call) => {
      if (transfers.some((t) => t.call === call)) return;
      const context = toolContext(turn, call, options);
      const approval = turn.approvals[call.id];
      if (approval) {
        const decided = await decidedCall(approval, call, turn, options, context);
        if (decided) await store(() => [ended(call, decided)]);
        return;
      }
      if (options.agent.todos && call.name === TODOS_TOOL) {
        await store((before) => {
          const change = changeTodos(before.turn.todos, call.arguments);
          const events = [ended(call, { result: change.result, isError: change.isError })];
          if (change.list) events.push({ type: 'todos.updated', data: { turn: turn.id, step, callId: call.id, ...change.list } });
          return events;
        });
        return;
      }
      if (options.agent.schedules && call.name === SCHEDULE_TOOL) {
        const { scheduleCall } = options;
        await (scheduleCall
          ? storeWith(() => scheduleCall(call, step))
          : store(() => [ended(call, { result: 'error: this runner keeps no schedules (nothing changed)', isError: true })]));
        return;
      }
      if (await needsApproval(options.agent.tools, call, context)) {
        await store(() => [approvalRequested(turn, step, call, options.agent.tools.find((t) => t.name === call.name)?.approvalTimeout, at)]);
        return;
      }
      const ran = await runToolCall(options.agent.tools, call, context);
      const result = ended(call, ran);
      results.push(result);
      const committed = store(() => [result]);
      // The step's last result: its commit is in flight, and the next request can go ahead of it.
      if (results.length === calls.length) ahead.speculation = speculate(results.reduce(evolveTurn, turn), options);
      await committed;
    }),
  );
  // Stored once every other call of the step is (or waits for a person): what those asked for was asked as the agent that made them.
  for (const { call, target } of transfers) await store((before) => handOff(before.turn, step, call, options.agent.name ?? '', target));
  return stored;
}

/**
 * What a call with an approval answers without running: the denial's text once denied, a closing
 * text when the turn is asked to end early while it waits; `run` once approved (with the person's
 * arguments when they edited them); null while it waits.
 */
export function approvalOutcome(approval: CallApproval, turn: TurnState): ToolResult | 'run' | null {
  switch (approval.status) {
    case 'awaiting':
      if (turn.ending === null) return null;
      return {
        result: turn.ending === 'wind-down' ? 'not run: the turn was asked to wind down while the call waited for approval' : 'not run: a newer input interrupted the turn while the call waited for approval',
        isError: true,
      };
    case 'denied':
      return { result: approval.subject === null ? `denied: ${approval.reason ?? 'nobody approved it in time'}` : `denied by the user: ${approval.reason ?? 'no reason given'}`, isError: true };
    case 'approved':
      return 'run';
    default: {
      const never: never = approval.status;
      throw new Error(`unknown approval status ${JSON.stringify(never)}`);
    }
  }
}

/** A result of a call run as approved: saying so when the person edited its arguments. */
export const approvedResult = (approval: CallApproval, ran: ToolResult): ToolResult =>
  approval.arguments === null ? ran : { ...ran, result: `run with arguments edited by the user: ${approval.arguments}\n\n${ran.result}` };

/** What a call with an approval answers (`approvalOutcome`), run when approved; null while it waits. */
async function decidedCall(approval: CallApproval, call: ToolCall, turn: TurnState, options: RunTurnOptions, context: ToolContext): Promise<ToolResult | null> {
  const outcome = approvalOutcome(approval, turn);
  if (outcome !== 'run') return outcome;
  return approvedResult(approval, await runToolCall(options.agent.tools, { ...call, arguments: approval.arguments ?? call.arguments }, context));
}

/**
 * The request for a person's approval of `call`, at `at` (its step's time): a new approval id (the
 * call's once key keeps it one per call), and when its tool's timeout (ms) denies it.
 */
export function approvalRequested(turn: TurnState, step: number, call: ToolCall, timeout: number | undefined, at: Date): DomainEvent {
  return {
    type: 'approval.requested',
    data: {
      turn: turn.id,
      step,
      approval: `appr_${randomUUID()}`,
      call,
      requestedAt: at.toISOString(),
      expiresAt: timeout === undefined ? null : new Date(at.getTime() + timeout).toISOString(),
    },
  };
}

const NEVER = new AbortController().signal;

const toolContext = (turn: TurnState, call: ToolCall, options: RunTurnOptions): ToolContext => ({
  conversation: options.conversation,
  turn: turn.id,
  callId: call.id,
  subject: turn.prompt.subject,
  signal: options.signal,
  windDown: options.windDown ?? NEVER,
  get pending() {
    return options.pending?.() ?? 0;
  },
  queued: turn.prompt.queued ?? false,
});
