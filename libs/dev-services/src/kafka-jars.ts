import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, open, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DevServicesError } from './errors';
import { isAlive } from './processes';

/**
 * The Apache Kafka broker as plain jars from Maven Central, cached outside the repository
 * and shared by every checkout and process of this user.
 *
 * Layout of `<cache>` (default `~/.cache/rudder/kafka-3.9.1`; `RUDDER_CACHE_DIR` replaces
 * `~/.cache/rudder`):
 *   pom.xml          the dependencies below
 *   libs/            the runtime classpath (`java -cp '<cache>/libs/*'`)
 *   libs.complete    sha256 of the pom that `libs/` was resolved from; written last
 *   resolve.lock     held (pid inside) while one process runs Maven
 */
export const KAFKA_VERSION = '3.9.1';

// The slf4j binding is not a transitive dependency of the broker: without it Kafka runs
// but logs nothing, which makes a broker that fails to start impossible to diagnose.
const POM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rudder.dev-services</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>${KAFKA_VERSION}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.25</version></dependency>
  </dependencies>
</project>
`;
const POM_HASH = createHash('sha256').update(POM).digest('hex');
const BROKER_JAR = `kafka_2.13-${KAFKA_VERSION}.jar`;
const LOCK_WAIT_MS = 10 * 60_000;

export function kafkaCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.RUDDER_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'rudder');
  return join(root, `kafka-${KAFKA_VERSION}`);
}

/**
 * Returns the directory of the broker jars, running Maven first when they are missing or were
 * resolved from another pom. Safe to call from several processes at once: one runs Maven,
 * the others wait for its marker.
 */
export async function ensureKafkaJars(options: { env?: NodeJS.ProcessEnv; log?: (line: string) => void } = {}): Promise<string> {
  const cache = kafkaCacheDir(options.env);
  const libs = join(cache, 'libs');
  if (await isComplete(cache)) return libs;

  await mkdir(cache, { recursive: true });
  const release = await acquireLock(join(cache, 'resolve.lock'), () => isComplete(cache));
  if (release === 'done-by-other') return libs;
  try {
    if (await isComplete(cache)) return libs;
    options.log?.(`fetching the Kafka ${KAFKA_VERSION} broker jars into ${cache} (first run only)`);
    const started = Date.now();
    await writeFile(join(cache, 'pom.xml'), POM);
    await rm(join(cache, 'libs.complete'), { force: true });
    // Resolve into a staging dir and rename: `libs/` is either complete or absent.
    const staging = join(cache, `libs.partial-${process.pid}`);
    await rm(staging, { recursive: true, force: true });
    let jars: string[];
    try {
      await runMaven(cache, staging);
      jars = (await readdir(staging)).filter((name) => name.endsWith('.jar'));
      if (!jars.includes(BROKER_JAR)) {
        throw new DevServicesError('KAFKA_JARS_UNAVAILABLE', `Maven finished but ${BROKER_JAR} is not in ${staging}`);
      }
      await rm(libs, { recursive: true, force: true });
      await rename(staging, libs);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await writeFile(join(cache, 'libs.complete'), POM_HASH);
    options.log?.(`fetched ${jars.length} jars in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return libs;
  } finally {
    await release();
  }
}

async function isComplete(cache: string): Promise<boolean> {
  const marker = await readFile(join(cache, 'libs.complete'), 'utf8').catch(() => '');
  if (marker.trim() !== POM_HASH) return false;
  return access(join(cache, 'libs', BROKER_JAR)).then(
    () => true,
    () => false,
  );
}

function runMaven(cache: string, outputDirectory: string): Promise<void> {
  const args = [
    '-q',
    '-B',
    '-f',
    join(cache, 'pom.xml'),
    'org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies',
    `-DoutputDirectory=${outputDirectory}`,
    '-DincludeScope=runtime',
  ];
  return new Promise((resolve, reject) => {
    execFile('mvn', args, { cwd: cache, maxBuffer: 16 * 1024 * 1024, timeout: LOCK_WAIT_MS }, (error, stdout, stderr) => {
      if (!error) return resolve();
      const missing = 'code' in error && error.code === 'ENOENT';
      const hint = missing
        ? 'Maven (`mvn`) is not installed. Install Maven and Java 17+, run Docker, or set KAFKA_BROKERS.'
        : `\`mvn ${args.join(' ')}\` failed (Maven Central unreachable?):\n${`${stdout}\n${stderr}`.trim().split('\n').slice(-30).join('\n')}`;
      reject(new DevServicesError('KAFKA_JARS_UNAVAILABLE', `cannot fetch the Kafka broker jars: ${hint}`, { cause: error }));
    });
  });
}

/**
 * An exclusive lock file holding the owner's pid. A lock whose owner died is taken over.
 * Returns the release function, or 'done-by-other' when `done()` turned true while waiting.
 */
async function acquireLock(path: string, done: () => Promise<boolean>): Promise<(() => Promise<void>) | 'done-by-other'> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
    }
    if (await done()) return 'done-by-other';
    const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    // An empty file is a lock being written right now; only a dead owner's lock is stale.
    if (Number.isInteger(owner) && owner > 0 && !isAlive(owner)) {
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new DevServicesError('KAFKA_JARS_LOCKED', `${path} is held by pid ${owner} for more than ${LOCK_WAIT_MS / 60_000} minutes`);
    }
    await sleep(500);
  }
}
