export { startCompanion, type Companion, type CompanionOptions } from './start-companion';
export { foldEvents, type FoldResult } from './projection/fold-events';
export { openReadModels } from './read-models/data-source';
