import type { InputKind } from '@rudder/contracts';

/**
 * The once keys an input's receipts are stored under, by the input id each names: each input
 * kind's receipt keys (`receiptKeys` of its rules in `inputs/`) and the once keys of the events
 * that answer it (`onceKey` of their rules: `core-events.ts`, the kind's module) are made of these.
 */
export const receiptKey = {
  input: (id: string) => `input:${id}`,
  rejected: (id: string) => `reject:${id}`,
  steerDecided: (id: string) => `steer-accepted:${id}`,
  /** A control's decision, by its kind: `stop:<id>`, `retract:<id>`, `promote:<id>`, `grant:<id>`, … */
  control: (kind: InputKind, id: string) => `${kind}:${id}`,
  approvalDecision: (id: string) => `approval-decision:${id}`,
};
