/**
 * Kafka and PostgreSQL for `npm start` and the test suite: from the environment, from Docker,
 * or as local processes. See `startInfrastructure`.
 */
export { startInfrastructure, type Infrastructure, type InfrastructureOptions, type InfrastructureSource } from './infrastructure';
export { startLocalKafka, type LocalKafka, type LocalKafkaNode, type LocalKafkaOptions } from './kafka';
export { startLocalPostgres, type LocalPostgres, type LocalPostgresOptions } from './postgres';
export { createTestDatabase, type TestDatabase, type TestDatabaseOptions } from './test-database';
export { dockerAnswers } from './docker';
export { ensureKafkaJars, kafkaCacheDir, KAFKA_VERSION } from './kafka-jars';
export { DevServicesError, type DevServicesErrorCode } from './errors';
export { isAlive } from './processes';
