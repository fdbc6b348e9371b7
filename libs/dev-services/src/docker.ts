import { request } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DevServicesError } from './errors';
import { waitForKafka } from './kafka-ready';
import { randomClusterId } from './kafka-settings';

/**
 * Docker, through testcontainers, when an engine answers. Deciding that must be fast on
 * machines without one: testcontainers' own discovery (`getContainerRuntimeClient()`) tries
 * strategy after strategy and can take long to give up, so we first ping the usual endpoints
 * ourselves, all at once, for at most `timeoutMs`, and import testcontainers only after one
 * answered. `RUDDER_DOCKER=0` (or false/off/no) skips Docker altogether.
 */
export async function dockerAnswers(env: NodeJS.ProcessEnv = process.env, timeoutMs = 1500): Promise<boolean> {
  if (/^(0|false|off|no)$/i.test(env.RUDDER_DOCKER ?? '')) return false;
  const pings = dockerEndpoints(env).map((endpoint) => ping(endpoint, timeoutMs));
  if (pings.length === 0) return false;
  return new Promise((resolve) => {
    let pending = pings.length;
    for (const p of pings) {
      p.then((ok) => {
        if (ok) resolve(true);
        else if (--pending === 0) resolve(false);
      });
    }
  });
}

type Endpoint = { socketPath: string } | { host: string; port: number };

function dockerEndpoints(env: NodeJS.ProcessEnv): Endpoint[] {
  const dockerHost = env.DOCKER_HOST;
  if (dockerHost) {
    // An explicit DOCKER_HOST is the only candidate, as for the docker CLI.
    if (dockerHost.startsWith('unix://')) return [{ socketPath: dockerHost.slice('unix://'.length) }];
    const tcp = /^tcp:\/\/([^:/]+):(\d+)/.exec(dockerHost);
    return tcp ? [{ host: tcp[1], port: Number(tcp[2]) }] : [];
  }
  const home = homedir();
  const sockets = [
    '/var/run/docker.sock',
    join(home, '.docker', 'run', 'docker.sock'), // Docker Desktop
    join(home, '.docker', 'desktop', 'docker.sock'),
    join(home, '.colima', 'default', 'docker.sock'),
  ];
  if (env.XDG_RUNTIME_DIR) sockets.push(join(env.XDG_RUNTIME_DIR, 'docker.sock')); // rootless
  return sockets.map((socketPath) => ({ socketPath }));
}

/** True when `GET /_ping` answers 200 in time. A TLS-only engine (tcp, port 2376) counts as up. */
function ping(endpoint: Endpoint, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ ...endpoint, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 || ('port' in endpoint && endpoint.port === 2376));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

export type Started = { url: string; stop(): Promise<void> };

const KAFKA_IMAGE = 'apache/kafka:3.9.1';
const POSTGRES_IMAGE = 'postgres:16';
const KAFKA_PORT = 9092; // the listener clients outside the container use
const STARTER = '/tmp/rudder-start.sh';

/**
 * Kafka in the apache/kafka image, single-node KRaft. The broker must advertise the port
 * Docker maps, which is known only once the container runs: the container waits for a
 * start script, which we copy in after start (what testcontainers-java does for this image).
 */
export async function startDockerKafka(options: { partitions?: number } = {}): Promise<Started> {
  const { GenericContainer, Wait } = await import('testcontainers');
  try {
    const container = await new GenericContainer(KAFKA_IMAGE)
      .withExposedPorts(KAFKA_PORT)
      .withEnvironment({
        CLUSTER_ID: randomClusterId(),
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${KAFKA_PORT},BROKER://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT',
        KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9094',
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '4',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS: '1000',
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
        KAFKA_NUM_PARTITIONS: String(options.partitions ?? 1),
      })
      .withEntrypoint(['sh'])
      // Waits for the script's last line, so a half-copied script never runs.
      .withCommand(['-c', `echo 'waiting for ${STARTER}'; until grep -q '^# end' ${STARTER} 2>/dev/null; do sleep 0.1; done; exec sh ${STARTER}`])
      .withWaitStrategy(Wait.forLogMessage(`waiting for ${STARTER}`))
      .start();
    const brokers = `${container.getHost()}:${container.getMappedPort(KAFKA_PORT)}`;
    const advertised = `PLAINTEXT://${brokers},BROKER://${container.getHostname()}:9093`;
    await container.copyContentToContainer([
      { content: `export KAFKA_ADVERTISED_LISTENERS=${advertised}\nexec /etc/kafka/docker/run\n# end\n`, target: STARTER, mode: 0o755 },
    ]);
    try {
      await waitForKafka(brokers, 120_000);
    } catch (error) {
      await container.stop().catch(() => undefined);
      throw error;
    }
    return { url: brokers, stop: async () => void (await container.stop()) };
  } catch (cause) {
    throw new DevServicesError('DOCKER_START_FAILED', `the ${KAFKA_IMAGE} container did not start: ${describe(cause)}`, { cause });
  }
}

export async function startDockerPostgres(): Promise<Started> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  try {
    const container = await new PostgreSqlContainer(POSTGRES_IMAGE)
      .withUsername('postgres')
      .withPassword('postgres')
      .withDatabase('postgres')
      .start();
    return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
  } catch (cause) {
    throw new DevServicesError('DOCKER_START_FAILED', `the ${POSTGRES_IMAGE} container did not start: ${describe(cause)}`, { cause });
  }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
