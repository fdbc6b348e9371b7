export * from './append';
export * from './fencing';
export * from './outbox-relay';
export * from './read';
export * from './schema';
export * from './stored-event';
