/**
 * The once keys an input's receipts are stored under, by the input id each names: each input
 * kind's receipt keys (`receiptKeys` of its rules in `inputs/`) and the once keys of the events
 * that answer it (`onceKey` of their rules: `core-events.ts`, the kind's module) are made of these.
 */
export const receiptKey = {
  input: (id: string) => `input:${id}`,
  rejected: (id: string) => `reject:${id}`,
  steerDecided: (id: string) => `steer-accepted:${id}`,
  stop: (id: string) => `stop:${id}`,
  retract: (id: string) => `retract:${id}`,
  promote: (id: string) => `promote:${id}`,
  grant: (id: string) => `grant:${id}`,
  approvalDecision: (id: string) => `approval-decision:${id}`,
};
