export { RudderClient, createRudderClient, type RudderClientOptions, type WriteOptions } from './client';
export { RudderError, type RudderErrorCode } from './errors';
export { eventStream, type EventsOptions, type StreamEvent, type TokenEvent } from './events';
