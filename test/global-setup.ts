import type { TestProject } from 'vitest/node';
import { startInfrastructure } from '@rudder/dev-services';
import { ensureBrowser } from '../scripts/setup-browser';
import { buildBundles, type Bundles } from './bundles';

/**
 * One Kafka and one PostgreSQL for the whole run of the system tiers, decided like `npm
 * start` decides (environment, then Docker, then local processes). Spec files isolate
 * themselves with a fresh database and a topic namespace of their own. The web chat's spec
 * drives Debian's chromium, installed here when it is missing (scripts/setup-browser.ts). The
 * programs specs start as processes are bundled once for the run (test/bundles.ts).
 */
export default async function setup(project: TestProject) {
  const shared = (globalThis as { [SHARED]?: Shared })[SHARED] ??= { users: 0, infrastructure: start() };
  shared.users += 1;
  const { chromiumPath, infrastructure, bundles } = await shared.infrastructure;
  project.provide('chromiumPath', chromiumPath);
  project.provide('kafkaBrokers', infrastructure.kafkaBrokers);
  project.provide('databaseUrl', infrastructure.databaseUrl);
  project.provide('bundles', bundles.bundles);
  return async () => {
    shared.users -= 1;
    if (shared.users === 0) {
      bundles.remove();
      await infrastructure.stop();
    }
  };
}

/**
 * The system tiers are two projects (int and e2e, run beside each other) with this one setup:
 * vitest calls it once per project, in its own process, so the first call starts the
 * infrastructure and the last teardown stops it.
 */
const SHARED = Symbol.for('rudder.test-infrastructure');
type Shared = { users: number; infrastructure: ReturnType<typeof start> };

async function start() {
  const chromiumPath = ensureBrowser();
  const [infrastructure, bundles] = await Promise.all([startInfrastructure({ log: (line) => process.stderr.write(`[infra] ${line}\n`) }), buildBundles()]);
  return { chromiumPath, infrastructure, bundles };
}

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    databaseUrl: string;
    chromiumPath: string;
    bundles: Bundles;
    /** How many PostgreSQL primaries a stack has (a fresh database each): the project's `provide`, else 1. */
    databases?: number;
  }
}
