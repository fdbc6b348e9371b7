export * from './decide';
export * from './derived-keys';
export * from './once-keys';
export * from './state';
export * from './receipts';
export * from './rules';
