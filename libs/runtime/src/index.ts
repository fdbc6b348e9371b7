export * from './config';
export * from './kafka';
export * from './log';
export * from './postgres';
