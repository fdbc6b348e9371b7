/** The Kafka topics of the integration contract. Keys are conversation keys on every topic. */
export const Topics = {
  /** Chats (and, later, steers and stops) to answer. Another service may produce here itself. */
  inputs: 'agent.inputs',
  /** What happened, in order per conversation: the worker's event log, relayed through the outbox. */
  events: 'agent.events',
  /** Streamed model tokens; best effort, not stored, not resumable. */
  tokens: 'agent.tokens',
  /** Records of agent.inputs that did not parse or validate, with the reason in headers. */
  inputsDlq: 'agent.inputs.dlq',
  /** Records of agent.events that the companion could not read, with the reason in headers. */
  eventsDlq: 'agent.events.dlq',
} as const;

export type TopicName = (typeof Topics)[keyof typeof Topics];
