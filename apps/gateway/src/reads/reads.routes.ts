import { FOLLOWUPS_DEFAULT, FOLLOWUPS_MAX, FollowupsAnswer, InputId, RecapAnswer, StatusAnswer, TodosAnswer, TranscriptAnswer, TurnAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { conversation, key, read, readHeaders } from '../http/openapi';
import { route, type Routes } from '../http/route';

export const READ_ROUTES = {
  status: route('get', '/v1/conversations/{key}', 'Status: the running turn, pending steers and follow-ups, agent (and grants, for the owner)', {
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the status', StatusAnswer, ['not_found']),
  }),
  messages: route('get', '/v1/conversations/{key}/messages', 'The transcript, oldest first', {
    requestParams: {
      path: conversation,
      header: readHeaders,
      query: z.object({
        after: z.string().optional().meta({ description: 'the `next` cursor of the previous page' }),
        limit: z.string().regex(/^\d+$/).optional().meta({ description: '1-200' }),
        include: z.literal('rolledBack').optional().meta({ description: 'the rows of rolled-back turns too, each `rolledBack: true` (hidden by default)' }),
      }),
    },
    responses: read('one page', TranscriptAnswer, ['not_found']),
  }),
  turn: route('get', '/v1/conversations/{key}/turns/{turn}', 'One turn', {
    requestParams: { path: z.object({ key, turn: z.string().min(1).max(200) }), header: readHeaders },
    responses: read('the turn', TurnAnswer, ['not_found']),
  }),
  turnOf: route('get', '/v1/conversations/{key}/turns', 'The turn that answered or took an input', {
    requestParams: { path: conversation, header: readHeaders, query: z.object({ input: InputId }) },
    responses: read('the turn', TurnAnswer, ['not_found']),
  }),
  followups: route('get', '/v1/conversations/{key}/followups', "Short next messages in the user's voice, for buttons under the last answer", {
    description:
      "Made from the transcript up to the conversation's last ended turn by a model request of their own, outside every turn, and cached for that turn (every gateway shares it). A clicked one is sent as an ordinary chat; nothing tells the agent it was suggested. Empty (200) when no turn has ended yet, or on any failure to make them (the model's error, 429, timeout, an unreadable answer), which is not cached. Needs `read`.",
    requestParams: {
      path: conversation,
      header: readHeaders,
      query: z.object({ n: z.string().regex(/^\d+$/).optional().meta({ description: `how many, 1-${FOLLOWUPS_MAX} (default ${FOLLOWUPS_DEFAULT})` }) }),
    },
    responses: read('at most `n` suggestions', FollowupsAnswer, ['not_found', 'rate_limited']),
  }),
  todos: route('get', '/v1/conversations/{key}/todos', "The agent's plan: a checklist its model keeps with the built-in `todos` tool", {
    description:
      "Items in order, each `{n, text, status}` (`pending`, `in_progress`, `done`); `n` is stable for the conversation's life and never used again once deleted. Every model request of the agent carries the plan right after its instructions. Empty when the agent keeps none. The stream carries each change as `todos.updated` (the whole list); follow it after `position`. Needs `read`.",
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the plan', TodosAnswer, ['not_found']),
  }),
  recap: route('get', '/v1/conversations/{key}/recap', 'Two or three sentences on where the conversation stood, for a person returning', {
    description:
      "Made from the transcript up to the conversation's last ended turn by a model request of its own, outside every turn, cached for that turn, and never shown to the agent. Empty (200) when no turn has ended yet, or on any failure to make it, which is not cached. Needs `read`.",
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the recap', RecapAnswer, ['not_found', 'rate_limited']),
  }),
} satisfies Routes;
