import { defineConfig } from 'vitest/config';

/**
 * Tiers by suffix: `.unit.spec.ts` (no I/O but loopback HTTP to the scripted model),
 * `.int.spec.ts` (one component on real PostgreSQL/Kafka), `.e2e.spec.ts` (the services
 * as a system). The system tiers share one Kafka and one PostgreSQL started by the global
 * setup (see libs/dev-services); each spec file gets a topic namespace of its own, and the e2e specs and
 * the event store's and companion's int specs a fresh database (the gateway's int specs share the
 * run's). See docs/testing.md.
 */
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['{apps,libs,examples}/**/*.unit.spec.ts'] } },
      {
        test: {
          name: 'system',
          include: ['{apps,libs,examples,test}/**/*.{int,e2e}.spec.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Two cores: spec files that start services run one at a time.
          fileParallelism: false,
          // The services' logs as JSON lines, which specs read (a terminal would make them pretty).
          env: { LOG_FORMAT: 'json' },
        },
      },
    ],
  },
});
