/// <reference types="vite/client" />
import { describe, expect, it } from 'vitest';

/**
 * Every module of the contracts loads. Its tables are built as it loads (a kind's contract, the
 * record schemas, the event contracts joined, where a type declared twice is refused), so a
 * defect there throws at import; imported here inside a test, that is this test failing, named
 * (the other specs import them at their top, where it fails the file before any test runs).
 */
const MODULES = import.meta.glob(['./**/*.ts', '!./**/*.spec.ts']);

describe('the contracts’ modules', () => {
  it.each(Object.keys(MODULES))('%s loads', async (path) => {
    await expect(MODULES[path]()).resolves.toBeDefined();
  });
});
