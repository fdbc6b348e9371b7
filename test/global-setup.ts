import type { TestProject } from 'vitest/node';
import { startInfrastructure } from '@rudder/dev-services';

/**
 * One Kafka and one PostgreSQL for the whole run of the system tiers, decided like `npm
 * start` decides (environment, then Docker, then local processes). Spec files isolate
 * themselves with a fresh database and a topic namespace of their own.
 */
export default async function setup(project: TestProject) {
  const infrastructure = await startInfrastructure({ log: (line) => process.stderr.write(`[infra] ${line}\n`) });
  project.provide('kafkaBrokers', infrastructure.kafkaBrokers);
  project.provide('databaseUrl', infrastructure.databaseUrl);
  return () => infrastructure.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    databaseUrl: string;
  }
}
