export { startCompanion, type Companion, type CompanionOptions } from './start-companion';
export { foldEvents, type FoldResult } from './projection/fold-events';
export type { CompanionConversationStatus } from './queries/conversation-status';
export type { InputView } from './queries/input-view';
