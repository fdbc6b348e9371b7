export * from './decide';
export * from './derived-keys';
export * from './inputs';
export * from './once-keys';
export * from './receipts';
export * from './rules';
export * from './same-input';
export * from './state';
