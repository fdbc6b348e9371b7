import { describe, expect, it } from 'vitest';
import { ByteBudget } from './byte-budget';

describe('ByteBudget', () => {
  it('evicts the oldest entries past its budget, counts a release once, and evicts an entry larger than the budget at once', () => {
    const evicted: string[] = [];
    const budget = new ByteBudget<string>(10, (entry) => evicted.push(entry));
    budget.add('a', 4);
    budget.add('b', 4);
    budget.release('a');
    budget.release('a');
    expect(budget.bytes).toBe(4);
    budget.add('c', 4);
    budget.add('d', 4);
    expect(evicted).toEqual(['b']);
    expect(budget.bytes).toBe(8);
    budget.add('huge', 11);
    expect(evicted).toEqual(['b', 'c', 'd', 'huge']);
    expect(budget.bytes).toBe(0);
  });
});
