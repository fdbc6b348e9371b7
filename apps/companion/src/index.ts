export { startCompanion, type Companion, type CompanionOptions } from './start-companion';
export { foldEvents, type FoldResult } from './projection/fold-events';
export { openReadModels } from './read-models/data-source';
export { affordanceSettings, DEFAULT_FOLLOWUPS_PROMPT, DEFAULT_RECAP_PROMPT, ANSWER_SHAPE, type AffordanceSettings } from './affordances/settings';
