/** The `budgeted` agent's context budget (test/agents/worker.ts), which test/long-conversations.e2e.spec.ts checks its requests against. */
export const BUDGET_TOKENS = 6000;
export const BUDGET_TOOL_RESULT_TOKENS = 1000;
/** The `compacting` agent's compactAt and summary prompt (test/compaction.e2e.spec.ts). */
export const COMPACT_AT_TOKENS = 4000;
export const SUMMARY_PROMPT = 'Summarise the conversation for the test (compacting agent).';
