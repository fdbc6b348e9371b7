import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { changeTodos, emptyTodos, MAX_TODO_ITEMS, planMessage, renderTodos, type TodoList } from './todos';

const change = (list: TodoList, changes: unknown) => changeTodos(list, JSON.stringify(changes));
const listOf = (result: ReturnType<typeof changeTodos>) => {
  if (result.isError) throw new Error(result.result);
  return result.list;
};

describe('the plan (todos)', () => {
  it('adds, sets and deletes in one call, in that order; the result shows the whole plan', () => {
    const first = listOf(change(emptyTodos(), { add: ['fetch', { text: 'migrate', status: 'in_progress' }] }));
    expect(first).toEqual({ items: [{ n: 1, text: 'fetch', status: 'pending' }, { n: 2, text: 'migrate', status: 'in_progress' }], next: 3 });
    const second = change(first, { add: ['check'], set: [{ n: 3, status: 'done' }, { n: 1, status: 'done' }], delete: [2] });
    expect(second).toEqual({
      isError: false,
      list: { items: [{ n: 1, text: 'fetch', status: 'done' }, { n: 3, text: 'check', status: 'done' }], next: 4 },
      result: 'The plan now:\n1. [done] fetch\n3. [done] check',
    });
  });

  it('never uses a number twice: deleting the highest leaves the next past it', () => {
    const list = listOf(change(listOf(change(emptyTodos(), { add: ['a', 'b'] })), { delete: [2, 1] }));
    expect(list).toEqual({ items: [], next: 3 });
    expect(change(list, {}).result).toBe('The plan now:\n(empty)');
    expect(listOf(change(list, { add: ['c'] })).items).toEqual([{ n: 3, text: 'c', status: 'pending' }]);
  });

  it('a change it cannot make changes nothing and tells the model why', () => {
    const list = listOf(change(emptyTodos(), { add: ['a'] }));
    expect(change(list, { add: ['b'], set: [{ n: 7, status: 'done' }] })).toEqual({ isError: true, list: null, result: 'error: there is no item 7 on the plan (the plan is unchanged)' });
    expect(change(list, { delete: [9] }).result).toBe('error: there is no item 9 on the plan (the plan is unchanged)');
    expect(changeTodos(list, '{"add": [').result).toBe('error: the arguments are not JSON: {"add": [ (the plan is unchanged)');
    // Arguments that are not JSON are quoted back to the model up to 200 characters.
    const long = `{"add": ["${'y'.repeat(300)}`;
    expect(changeTodos(list, long).result).toBe(`error: the arguments are not JSON: ${long.slice(0, 200)} (the plan is unchanged)`);
    // No arguments at all (blank, as some models send for a call with nothing to change) change nothing and show the plan.
    for (const blank of ['', '  \n']) expect(changeTodos(list, blank)).toEqual({ isError: false, list, result: 'The plan now:\n1. [pending] a' });
    expect(change(list, { add: [''] }).result).toMatch(/^error: invalid arguments/);
    expect(change(list, { set: [{ n: 1, status: 'finished' }] }).result).toMatch(/^error: invalid arguments/);
    expect(change(list, { add: ['x'.repeat(301)] }).result).toMatch(/^error: invalid arguments/);
    const full = listOf(change(emptyTodos(), { add: Array.from({ length: MAX_TODO_ITEMS }, (_, i) => `item ${i}`) }));
    expect(change(full, { add: ['one more'] }).result).toMatch(/at most 50 items/);
    expect(listOf(change(full, { add: ['one more'], delete: [1] })).items).toHaveLength(MAX_TODO_ITEMS);
  });

  it('over any sequence of calls, numbers are unique, increasing in the list, below next, and next never goes back', () => {
    const call = fc.record(
      {
        add: fc.array(fc.string({ minLength: 1, maxLength: 5 }).filter((t) => t.trim() !== ''), { maxLength: 4 }),
        set: fc.array(fc.record({ n: fc.integer({ min: 1, max: 12 }), status: fc.constantFrom('pending', 'in_progress', 'done') }), { maxLength: 2 }),
        delete: fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(call, { maxLength: 12 }), (calls) => {
        let list = emptyTodos();
        const used = new Set<number>();
        for (const c of calls) {
          const result = change(list, c);
          if (result.isError) continue;
          expect(result.list.next).toBeGreaterThanOrEqual(list.next);
          for (const item of result.list.items) if (!list.items.some((i) => i.n === item.n)) expect(used.has(item.n)).toBe(false);
          list = result.list;
          for (const item of list.items) used.add(item.n);
          const numbers = list.items.map((i) => i.n);
          expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
          expect(new Set(numbers).size).toBe(numbers.length);
          expect(numbers.every((n) => n < list.next)).toBe(true);
        }
      }),
    );
  });

  it('a model request carries the plan as one text, nothing while it is empty', () => {
    expect(planMessage([])).toBeNull();
    const items = [{ n: 2, text: 'b', status: 'in_progress' as const }];
    expect(planMessage(items)).toBe(`Your plan for this conversation, as you last wrote it with the todos tool:\n${renderTodos(items)}`);
    expect(renderTodos(items)).toBe('2. [in_progress] b');
  });
});
