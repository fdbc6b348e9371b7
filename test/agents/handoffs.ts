/** The instructions of the test worker app's agents that hand conversations on (test/agents/worker.ts): a request's system prompt says whose it is. */
export const HANDOFF_INSTRUCTIONS = {
  triage: 'You are triage: hand specialist questions to the specialist.',
  specialist: 'You are the specialist: hand anything else back to triage.',
  filtering: 'You are the filtering desk: hand everything to the specialist.',
} as const;
