import { SCHEDULE_TOOL, SCHEDULES_MAX, ScheduleToolArguments } from '@rudder/contracts';
import type { Tool } from './tools';

export { SCHEDULE_TOOL };

/**
 * The built-in `schedule` tool as the model sees it (an agent's `schedules`, docs/agents.md
 * "Schedules the model makes"): it makes, changes, cancels and lists the schedules of the
 * conversation it answers in. The agent loop stores each call at its commit through the runner
 * (`RunTurnOptions.scheduleCall`), which decides it under the conversation's lock by the
 * `schedule` input kind's rules; `run` is never called.
 */
export const scheduleTool: Tool = {
  name: SCHEDULE_TOOL,
  description:
    'Schedules a message to this conversation at a later time, as if the person you answer sent it then: ' +
    'op "make" with text and either at (once) or every (cron, in tz), "change" or "cancel" one by its id, ' +
    `"list" them. The result says the schedule's id and when it fires next. A conversation has at most ${SCHEDULES_MAX} schedules.`,
  parameters: ScheduleToolArguments,
  run: () => Promise.reject(new Error('the schedule tool is run by the agent loop, at the commit of its result')),
};
