export { RudderClient, createRudderClient, type ReadOptions, type RudderClientOptions, type WriteOptions } from './client';
export { RudderError, type RudderErrorCode } from './errors';
export { eventStream, type EventsOptions, type StreamEvent, type StreamMessage, type TokenEvent } from './events';
