import { z } from 'zod';
import { TodoStatus, type TodoItem } from '@rudder/contracts';
import type { Tool } from './tools';

/**
 * The agent's plan for a conversation (docs/agents.md, "The plan"): a checklist its model keeps
 * through the built-in `todos` tool. It lives in the log (`todos.updated`, stored with the call's
 * result), so it is exactly once like any step; every model request carries it, right after the
 * instructions, so the model never has to read it back.
 */
export type TodoList = {
  items: TodoItem[];
  /** The number the next new item gets: past every number ever used, deleted ones too. */
  next: number;
};

export const emptyTodos = (): TodoList => ({ items: [], next: 1 });

/** The name of the built-in tool; an agent that keeps a plan may not have a tool of its own under it. */
export const TODOS_TOOL = 'todos';
/** A plan holds at most this many items, each at most this many characters; every request carries it, cut to its share of the budget (`PLAN_SHARE`, context.ts). */
export const MAX_TODO_ITEMS = 50;
export const MAX_TODO_TEXT = 300;

const ItemText = z.string().trim().min(1).max(MAX_TODO_TEXT);
const TodoChanges = z.object({
  add: z
    .array(z.union([ItemText, z.object({ text: ItemText, status: TodoStatus.optional() })]))
    .optional()
    .describe('New items, in order, each numbered past every number used before (pending unless a status is given).'),
  set: z
    .array(z.object({ n: z.number().int().positive(), status: TodoStatus }))
    .optional()
    .describe("Items' new statuses, by number."),
  delete: z.array(z.number().int().positive()).optional().describe('Numbers of items to take off the plan (their numbers are not used again).'),
});
type TodoChanges = z.infer<typeof TodoChanges>;

/**
 * The tool as the model sees it. The agent loop runs its calls itself, one at a time at the
 * commit that stores each result (`changeTodos`), so two calls of one reply see each other's
 * changes; `run` is never called.
 */
export const todosTool: Tool = {
  name: TODOS_TOOL,
  description:
    'Keeps your plan for this conversation: a numbered checklist you see at the start of every request. ' +
    'Use it only for work of several distinct steps, never for a single step. Add the steps when you start, ' +
    'mark one in_progress while you work on it and done when it is finished; delete what no longer applies. ' +
    'One call may add, set and delete (applied in that order). Numbers never change and are never reused.',
  parameters: TodoChanges,
  run: () => Promise.reject(new Error('the todos tool is run by the agent loop, at the commit of its result')),
};

export type TodoChange = { result: string; isError: false; list: TodoList } | { result: string; isError: true; list: null };

/**
 * What a call of the `todos` tool does to `list`: adds, sets, then deletes, all or nothing.
 * Arguments that are not JSON or not valid, an unknown number, or a plan past its bounds change
 * nothing and answer an error the model reads; otherwise the result shows the whole plan.
 */
export function changeTodos(list: TodoList, rawArguments: string): TodoChange {
  let json: unknown;
  try {
    json = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch {
    return refused(`the arguments are not JSON: ${rawArguments.slice(0, 200)}`);
  }
  const parsed = TodoChanges.safeParse(json);
  if (!parsed.success) return refused(`invalid arguments: ${z.prettifyError(parsed.error)}`);
  const changed = applied(list, parsed.data);
  if (typeof changed === 'string') return refused(changed);
  return { result: `The plan now:\n${renderTodos(changed.items) || '(empty)'}`, isError: false, list: changed };
}

function applied(list: TodoList, changes: TodoChanges): TodoList | string {
  let { next } = list;
  const items = list.items.map((item) => ({ ...item }));
  for (const added of changes.add ?? []) {
    const { text, status = 'pending' } = typeof added === 'string' ? { text: added } : added;
    items.push({ n: next++, text, status });
  }
  for (const { n, status } of changes.set ?? []) {
    const item = items.find((i) => i.n === n);
    if (!item) return `there is no item ${n} on the plan`;
    item.status = status;
  }
  for (const n of changes.delete ?? []) {
    if (!items.some((i) => i.n === n)) return `there is no item ${n} on the plan`;
  }
  // Stryker disable next-line ArrayDeclaration: `["Stryker was here"]` in place of the absent list holds no number, so it deletes nothing, as `[]` does.
  const kept = items.filter((i) => !(changes.delete ?? []).includes(i.n));
  if (kept.length > MAX_TODO_ITEMS) return `a plan holds at most ${MAX_TODO_ITEMS} items; this change would leave ${kept.length}`;
  return { items: kept, next };
}

const refused = (reason: string): TodoChange => ({ result: `error: ${reason} (the plan is unchanged)`, isError: true, list: null });

/** The plan as text, one item a line: `3. [in_progress] Migrate the forfaits-* fetchers`. */
export const renderTodos = (items: readonly TodoItem[]): string => items.map((i) => `${i.n}. [${i.status}] ${i.text}`).join('\n');

/** What a model request carries of the plan: a system message after the instructions; nothing while the plan is empty. */
export const planMessage = (items: readonly TodoItem[]): string | null =>
  items.length === 0 ? null : `Your plan for this conversation, as you last wrote it with the todos tool:\n${renderTodos(items)}`;
