export * from './api';
export * from './conversation-key';
export * from './events';
export * from './inputs';
export * from './topics';
export * from './storable-text';
export * from './companion';
export * from './answers';
