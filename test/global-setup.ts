import type { TestProject } from 'vitest/node';
import { startInfrastructure } from '@rudder/dev-services';
import { ensureBrowser } from '../scripts/setup-browser';

/**
 * One Kafka and one PostgreSQL for the whole run of the system tiers, decided like `npm
 * start` decides (environment, then Docker, then local processes). Spec files isolate
 * themselves with a fresh database and a topic namespace of their own. The web chat's spec
 * drives Debian's chromium, installed here when it is missing (scripts/setup-browser.ts).
 */
export default async function setup(project: TestProject) {
  project.provide('chromiumPath', ensureBrowser());
  const infrastructure = await startInfrastructure({ log: (line) => process.stderr.write(`[infra] ${line}\n`) });
  project.provide('kafkaBrokers', infrastructure.kafkaBrokers);
  project.provide('databaseUrl', infrastructure.databaseUrl);
  return () => infrastructure.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    databaseUrl: string;
    chromiumPath: string;
  }
}
