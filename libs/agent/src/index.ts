export * from './loop';
export * from './messages';
export * from './model';
export * from './tools';
export * from './turn';
