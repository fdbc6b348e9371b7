import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MUTANTS, type Area } from '../mutants/mutants';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AREAS: Area[] = ['steering', 'exactly once', 'access', 'read side', 'approvals', 'compaction', 'responses', 'mcp'];

/** `npm run mutants` itself runs apart from `npm test`; this keeps its entries applicable as the code they mutate changes. */
describe('the mutants list', () => {
  it('has at least 25 entries, uniquely named, over every area', () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(25);
    expect(new Set(MUTANTS.map((m) => m.name)).size).toBe(MUTANTS.length);
    expect(AREAS.filter((area) => !MUTANTS.some((m) => m.area === area))).toEqual([]);
  });

  it("finds each edit's search text exactly once in its file, and each spec file it names", () => {
    const problems = MUTANTS.flatMap((m) => [
      ...m.edits.flatMap((edit) => {
        const path = join(ROOT, edit.file);
        if (!existsSync(path)) return [`${m.name}: no file ${edit.file}`];
        const count = readFileSync(path, 'utf8').split(edit.search).length - 1;
        return count === 1 ? [] : [`${m.name}: its search text is in ${edit.file} ${count} times`];
      }),
      ...m.tests.filter((test) => !existsSync(join(ROOT, test))).map((test) => `${m.name}: no spec file ${test}`),
    ]);
    expect(problems).toEqual([]);
  });
});
