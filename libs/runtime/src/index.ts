export * from './config';
export * from './kafka';
export * from './log';
export * from './postgres';
export * from './kafka-batch-server';
export * from './metrics';
export * from './tracing';
export * from './dead-letters';
