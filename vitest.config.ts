import { defineConfig } from 'vitest/config';
import LongestFirst from './test/longest-first';

/**
 * Tiers by suffix: `.unit.spec.ts` (no I/O but loopback HTTP to the scripted model),
 * `.int.spec.ts` (one component on real PostgreSQL/Kafka), `.e2e.spec.ts` (the services
 * as a system). The system tiers share one Kafka and one PostgreSQL started by the global
 * setup (see libs/dev-services); each spec file gets a topic namespace of its own, and the e2e specs and
 * the event store's and companion's int specs a fresh database (the gateway's int specs share the
 * run's). See docs/testing.md.
 */
const ALONE = [
  // The browser's specs, one at a time after the others: a browser's timings want a core to itself.
  'test/web-chat.e2e.spec.ts',
  'test/web-chat-affordances.e2e.spec.ts',
  'test/web-chat-approvals.e2e.spec.ts',
  'test/web-chat-controls.e2e.spec.ts',
];

/**
 * The e2e specs that run on three PostgreSQL primaries (docs/operations.md, "Several PostgreSQL
 * primaries"): steering, exactly once through a worker's crash, and access. Their stacks get
 * three databases on the run's one server (`databases`), which are as separate for the code as
 * three servers: no transaction spans two. They run there only, not on one primary as well: one
 * primary is the same code on a map of one, which every other e2e spec runs on.
 */
const ON_THREE_PRIMARIES = ['test/steering.e2e.spec.ts', 'test/worker-crash.e2e.spec.ts', 'test/access.e2e.spec.ts'];

/** A system tier on the run's one Kafka and one PostgreSQL (test/global-setup.ts). */
const system = (name: string, include: string[], options: { exclude?: string[]; oneAtATime?: boolean; databases?: number }) => ({
  test: {
    name,
    include,
    ...(options.databases === undefined ? {} : { provide: { databases: options.databases } }),
    exclude: [...(options.exclude ?? []), '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: !options.oneAtATime,
    // The projects of a group run beside each other; a later group after (vitest asks for its own group for a project of other maxWorkers).
    sequence: { groupOrder: options.oneAtATime ? 1 : 0 },
    // The spec files a vitest worker runs share its process and its modules: each imports the
    // services' code once per worker, not once per file (which cost the int tier 270 of its
    // 363 s). Spec files keep nothing global of their own: each starts and stops its own stack.
    isolate: false,
    // The services' logs as JSON lines, which specs read (a terminal would make them pretty).
    env: { LOG_FORMAT: 'json' },
  },
});

export default defineConfig({
  test: {
    // Every spec file but the ALONE ones three at a time on two cores (each file has its own
    // topics, database, services and worker processes, and spends most of its time waiting on
    // them), the slowest first; vitest runs a project whose files go one at a time after the others.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    projects: [
      { test: { name: 'unit', include: ['{apps,libs,examples,scripts}/**/*.unit.spec.ts'] } },
      system('int', ['{apps,libs,examples,test}/**/*.int.spec.ts'], {}),
      system('e2e', ['{apps,libs,examples,test}/**/*.e2e.spec.ts'], { exclude: [...ALONE, ...ON_THREE_PRIMARIES] }),
      system('e2e-shards', ON_THREE_PRIMARIES, { databases: 3 }),
      system('e2e-alone', ALONE, { oneAtATime: true }),
    ],
  },
});
