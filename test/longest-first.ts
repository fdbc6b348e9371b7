import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The spec files that take longest (docs/testing.md, "How long it takes"), slowest first: each
 * starts before the short ones, so none is left to run alone at the end of its group while the
 * other workers have nothing to do. A file not named keeps vitest's own order after them (its
 * last run's time when the cache has it — a clean clone has none — else the larger file first).
 */
const SLOWEST = [
  'test/schedules.e2e.spec.ts',
  'test/worker-crash.e2e.spec.ts',
  'test/infrastructure-faults.e2e.spec.ts',
  'test/queue-debounce.e2e.spec.ts',
  'test/grow-primaries.e2e.spec.ts',
  'test/compaction.e2e.spec.ts',
  'test/soak.e2e.spec.ts',
  'test/outside-app.e2e.spec.ts',
  'test/queue-controls.e2e.spec.ts',
  'test/steering.e2e.spec.ts',
  'test/approvals.e2e.spec.ts',
  'examples/adk-trips/src/adk-trips.e2e.spec.ts',
  'examples/langgraph-trips/src/langgraph-trips.e2e.spec.ts',
  'test/todos.e2e.spec.ts',
  'libs/dev-services/src/infrastructure.int.spec.ts',
];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return at === -1 ? SLOWEST.length : at;
    };
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: files of the same rank keep vitest's order.
    return sorted.sort((a, b) => group(a) - group(b) || rank(a) - rank(b));
  }
}
