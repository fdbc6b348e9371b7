export * from './compaction';
export * from './context';
export * from './loop';
export * from './messages';
export * from './model';
export * from './tokens';
export * from './tools';
export * from './turn';
