/**
 * The durability mutants: one entry per known defect — the small edit that puts it back, and
 * the tests that must catch it. `npm run mutants` (scripts/mutants.ts) applies each to a
 * scratch worktree and runs its tests; every entry must be caught, on an assertion. A mutant
 * whose tests pass is a hole in the suite: mend the test, not the entry. See docs/testing.md,
 * "Mutants".
 */

export type Area = 'steering' | 'exactly once' | 'access' | 'read side' | 'approvals' | 'compaction' | 'responses' | 'mcp';

/** An edit of one file: `search` (found exactly once) becomes `replace`. */
export type Edit = { file: string; search: string; replace: string };

export type Mutant = {
  /** A short kebab-case name: `npm run mutants -- <name>` runs it alone. */
  name: string;
  area: Area;
  /** The promise it breaks (the SPEC's, or docs'), in a sentence. */
  breaks: string;
  /** The commit that fixed it, when the defect was once real. */
  fixedBy?: string;
  edits: Edit[];
  /** The spec files to run, from the repository's root. */
  tests: string[];
  /** vitest's `-t`: the tests (by name, a regular expression) that must catch it; all of `tests` when absent. */
  only?: string;
};

export const MUTANTS: Mutant[] = [
  // Steering
  {
    name: 'softer-stop-undoes-harder',
    area: 'steering',
    breaks: 'a later, softer request never undoes a harder one: a graceful stop after a stop still stops',
    fixedBy: '576c11b',
    edits: [
      {
        file: 'libs/agent/src/turn.ts',
        search: '(current !== null && ENDING_RANK[current] > ENDING_RANK[next] ? current : next)',
        replace: 'next',
      },
    ],
    tests: ['libs/conversation/src/inputs/stop.unit.spec.ts'],
    only: 'softer request never undoes',
  },
  {
    name: 'interrupt-drops-landed-steer',
    area: 'steering',
    breaks: 'a steer that landed is shown to the model even by a turn then interrupted: it takes it at its next step',
    edits: [
      {
        file: 'libs/conversation/src/decide.ts',
        search: '  if (state.steers.length === 0) {',
        replace: "  if (state.steers.length === 0 || state.ending === 'interrupt') {",
      },
    ],
    tests: ['libs/conversation/src/decide.unit.spec.ts'],
    only: 'by a turn then interrupted',
  },
  {
    name: 'steer-lands-on-ending-turn',
    area: 'steering',
    breaks: '`landed` means the turn shows it to the model: a steer to a turn asked to end does not land, it waits as a turn of its own',
    edits: [
      {
        file: 'libs/conversation/src/inputs/shared.ts',
        search: 'state.runningTurn !== null && state.ending === null && state.steersLanded < policy.maxTaken',
        replace: 'state.runningTurn !== null && state.steersLanded < policy.maxTaken',
      },
    ],
    tests: ['libs/conversation/src/decide.unit.spec.ts', 'libs/conversation/src/inputs/steer.unit.spec.ts'],
  },
  {
    name: 'steer-past-the-cap-lands',
    area: 'steering',
    breaks: 'past the cap (maxTaken), and to an agent whose turns take none, a steer does not land',
    edits: [
      {
        file: 'libs/conversation/src/inputs/shared.ts',
        search: 'state.runningTurn !== null && state.ending === null && state.steersLanded < policy.maxTaken',
        replace: 'state.runningTurn !== null && state.ending === null',
      },
    ],
    tests: ['libs/conversation/src/inputs/steer.unit.spec.ts'],
    only: 'past the cap',
  },
  {
    name: 'final-answer-ends-over-steer',
    area: 'steering',
    breaks: 'a steer sent while the model writes the final answer: the turn takes one more step instead of ending',
    edits: [
      {
        file: 'libs/conversation/src/decide.ts',
        search: "  const atStep = end ? end.data.status === 'completed' : ",
        replace: '  const atStep = end ? false : ',
      },
    ],
    tests: ['libs/conversation/src/decide.unit.spec.ts'],
    only: 'with the final answer, instead of ending the turn',
  },
  {
    name: 'steer-taken-twice',
    area: 'exactly once',
    breaks: 'a stored steered message is in place in the next request, never taken again',
    edits: [
      {
        file: 'libs/conversation/src/core-events.ts',
        search: '    evolve: (state, data) => ({ ...state, steers: without(state.steers, data.input.id) }),',
        replace: '    evolve: (state) => state,',
      },
    ],
    tests: ['libs/conversation/src/decide.unit.spec.ts'],
  },

  // Exactly once
  {
    name: 'framework-retry-asks-next-step',
    area: 'exactly once',
    breaks: "a model request a framework retries (its own retry of a failed call) asks for the same step again, and its reply is stored once",
    fixedBy: 'cd21cdc',
    edits: [
      {
        file: 'libs/agent/src/durable-turn.ts',
        search: '    const step = this.step;\n',
        replace: '    const step = this.step++;\n',
      },
    ],
    tests: ['libs/agent/src/durable-turn.unit.spec.ts'],
    only: 'its own retry',
  },
  {
    name: 'tool-answer-after-stop-stored',
    area: 'exactly once',
    breaks: 'a tool that answers after a stop (one that caught its own abort) stores nothing',
    fixedBy: '7033cfa',
    edits: [
      {
        file: 'libs/agent/src/durable-turn.ts',
        search: '    // A tool that answers after the run was stopped (one that caught its own abort) stores nothing.\n    this.signal.throwIfAborted();\n',
        replace: '',
      },
    ],
    tests: ['libs/agent/src/durable-turn.unit.spec.ts'],
    only: 'a tool that answers after a stop',
  },
  {
    name: 'stopped-reply-stored-as-whole',
    area: 'exactly once',
    breaks: 'a stop while the model streams its reply stores nothing of it: a reply cut off by the abort is not stored as the whole reply',
    fixedBy: '8b22636',
    edits: [
      {
        file: 'libs/agent/src/model-step.ts',
        search: '  // an aborted stream as if it were complete; an agent\'s own client may do the same).\n  signal.throwIfAborted();\n',
        replace: '  // an aborted stream as if it were complete; an agent\'s own client may do the same).\n',
      },
    ],
    tests: ['libs/agent/src/loop.unit.spec.ts'],
    only: 'aborted while the model replies',
  },
  {
    name: 'paused-worker-calls-model',
    area: 'exactly once',
    breaks: 'a worker paused past its session whose partition moved asks the model nothing: it checks its epoch first',
    fixedBy: 'b586a6a',
    edits: [
      {
        file: 'apps/turn-worker/src/turns/turn-run.ts',
        search: '          return store.check(partition);',
        replace: '          return Promise.resolve();',
      },
    ],
    tests: ['apps/turn-worker/src/turns/conversation-runner.int.spec.ts'],
    only: 'partition was taken meanwhile',
  },
  {
    name: 'guard-verdict-shared-across-conversations',
    area: 'exactly once',
    breaks: "ids are the client's: two conversations whose inputs share an id each get their own guard verdict",
    fixedBy: '4186297',
    edits: [
      {
        file: 'apps/turn-worker/src/ingest/input-guards.ts',
        search: 'JSON.stringify([input.conversation, input.id])',
        replace: 'JSON.stringify([input.id])',
      },
    ],
    tests: ['apps/turn-worker/src/ingest/ingest-inputs.int.spec.ts'],
    only: 'each get their own guard verdict',
  },
  {
    name: 'lock-order-by-collation',
    area: 'exactly once',
    breaks: "several conversations' rows are locked by their keys' bytes, never by the column's collation (two orders can deadlock)",
    fixedBy: 'fd93768',
    edits: [
      {
        file: 'libs/event-store/src/append-to-conversations.ts',
        search: '        ORDER BY k COLLATE "C"',
        replace: '        ORDER BY k',
      },
    ],
    tests: ['libs/event-store/src/lock-order.int.spec.ts'],
  },
  {
    name: 'relay-marks-before-publishing',
    area: 'exactly once',
    breaks: 'the outbox relay marks an event published only after the broker has it: a crash in between publishes again, never loses',
    edits: [
      {
        file: 'libs/event-store/src/outbox-relay.ts',
        search:
          '    if (fromMemory.events.length > 0) {\n      await this.options.publish(fromMemory.events, fromMemory.traces);\n      this.wasPublished(fromMemory.events);\n',
        replace:
          '    if (fromMemory.events.length > 0) {\n      this.wasPublished(fromMemory.events);\n      await this.mark();\n      await this.options.publish(fromMemory.events, fromMemory.traces);\n',
      },
    ],
    tests: ['libs/event-store/src/outbox-relay.int.spec.ts'],
  },

  {
    name: 'snapshot-lacking-turns-used',
    area: 'exactly once',
    breaks: 'reading a conversation again from its snapshot, the history is whole: a snapshot kept with fewer earlier turns than now wanted is read past (the log in full)',
    fixedBy: '8d7ba74',
    edits: [
      {
        file: 'apps/turn-worker/src/turns/conversation.ts',
        search: '  if (mayLackTurns) return null;\n',
        replace: '',
      },
    ],
    tests: ['apps/turn-worker/src/turns/conversation.unit.spec.ts'],
    only: 'a snapshot kept with fewer turns',
  },

  {
    name: 'failed-send-keeps-its-producer',
    area: 'exactly once',
    breaks: "no error loses an accepted input: after a send whose answers were lost, the gateway's next input is written, not acknowledged as a duplicate",
    fixedBy: '6e53d74',
    edits: [
      {
        file: 'apps/gateway/src/writes/inputs-publisher.ts',
        search: '          const failed = this.producer;\n          this.producer = this.newProducer();\n          this.connected = null;\n          void failed.disconnect().catch(() => undefined);\n',
        replace: '',
      },
    ],
    tests: ['apps/gateway/src/writes/inputs-publisher.int.spec.ts'],
    only: 'answers were lost',
  },

  // Access
  {
    name: 'unowned-conversation-readable',
    area: 'access',
    breaks: 'a conversation nobody opened yet is readable by nobody: a stream opened on such a key carries nothing of its later owner',
    fixedBy: 'e008fa6',
    edits: [
      {
        file: 'libs/conversation/src/state.ts',
        search: "  if (state.owner === null) return access === 'write';",
        replace: '  if (state.owner === null) return true;',
      },
    ],
    tests: ['apps/gateway/src/events/event-stream.unit.spec.ts'],
    only: 'nobody owns',
  },
  {
    name: 'read-grant-writes',
    area: 'access',
    breaks: 'a subject granted read reads and may not write: its chat and steer are refused forbidden',
    edits: [
      {
        file: 'libs/conversation/src/state.ts',
        search: "  return granted === 'write' || (granted === 'read' && access === 'read');",
        replace: '  return granted !== undefined;',
      },
    ],
    tests: ['libs/conversation/src/inputs/message.unit.spec.ts'],
    only: 'who may write',
  },
  {
    name: 'refusal-keeps-its-text',
    area: 'exactly once',
    breaks: "a refused input keeps the SHA-256 of its text, not the text: a flood of refusals does not grow the log with what was refused",
    fixedBy: '6a49be8',
    edits: [
      {
        file: 'libs/conversation/src/inputs/message.ts',
        search: 'data: { input: { id: input.id, kind: input.type, digest: inputDigest(how.text) }, ...refusal }',
        replace: 'data: { input: { id: input.id, kind: input.type, digest: inputDigest(how.text), text: how.text }, ...refusal }',
      },
    ],
    tests: ['libs/conversation/src/inputs/message.unit.spec.ts'],
    only: 'a refusal',
  },
  {
    name: 'edit-escapes-the-input-rate',
    area: 'access',
    breaks: "every input counts against its subject's input rate: an edit past it is 429 rate_limited",
    fixedBy: '4148dea',
    edits: [
      {
        file: 'apps/gateway/src/inputs/edit/edit.ts',
        search: '@UseGuards(AuthGuard, InputRateGuard)\nexport class EditController',
        replace: '@UseGuards(AuthGuard)\nexport class EditController',
      },
    ],
    tests: ['apps/gateway/src/limits/limits.int.spec.ts'],
    only: 'past its inputs per second',
  },
  {
    name: 'derived-key-opened-by-another',
    area: 'responses',
    breaks: 'a derived Responses conversation key is opened only by a chat of the subject and nonce that derive it',
    fixedBy: 'a4689e7',
    edits: [
      {
        file: 'libs/conversation/src/derived-keys.ts',
        search: '    if (derivedConversationKey(subject, derivedFrom) !== conversation) return',
        replace: '    if (false) return',
      },
    ],
    tests: ['libs/conversation/src/inputs/message.unit.spec.ts'],
    only: 'conversation keys the Responses door derives',
  },
  {
    name: 'approval-by-reader',
    area: 'approvals',
    breaks: 'deciding an approval needs write access: another subject is refused forbidden',
    edits: [
      {
        file: 'libs/conversation/src/inputs/approval.ts',
        search: "    if (unwritable !== null) return refused('forbidden', unwritable);\n",
        replace: '',
      },
    ],
    tests: ['libs/conversation/src/inputs/approval.unit.spec.ts'],
  },

  // The read side
  {
    name: 'resume-skips-events',
    area: 'read side',
    breaks: 'a resume never skips: events the store had not folded when asked are fetched before the next live one',
    fixedBy: 'e008fa6',
    edits: [
      {
        file: 'apps/gateway/src/events/event-stream.ts',
        search: '    return event.position > this.known && !this.tailJoined && !opensConversation(event);',
        replace: '    return false;',
      },
    ],
    tests: ['apps/gateway/src/events/event-stream.unit.spec.ts'],
    only: 'never skips',
  },
  {
    name: 'tokens-before-grant-streamed',
    area: 'read side',
    breaks: 'a reader granted while its stream runs is carried the tokens of the turns started after the grant only',
    fixedBy: 'c1626b5',
    edits: [
      {
        file: 'apps/gateway/src/events/event-stream.ts',
        search: '    if (this.reader?.grantedAt != null && !this.turnsAfterGrant.has(token.record.turn)) return;\n',
        replace: '',
      },
    ],
    tests: ['apps/gateway/src/events/event-stream.unit.spec.ts'],
    only: 'granted while the stream runs',
  },
  {
    name: 'owner-loses-first-tokens',
    area: 'read side',
    breaks: "the owner's stream opened before the first write carries its first answer's tokens that came before the conversation's opening (two topics, no order)",
    fixedBy: '0c1489b',
    edits: [
      {
        file: 'apps/gateway/src/events/event-stream.ts',
        search: '      if (this.reader.unowned) this.unownedTokens = [...this.unownedTokens.slice(1 - MAX_UNOWNED_TOKENS), token];\n',
        replace: '',
      },
    ],
    tests: ['apps/gateway/src/events/event-stream.unit.spec.ts'],
    only: "the first answer's tokens",
  },

  {
    name: 'refused-write-names-a-position',
    area: 'read side',
    breaks: 'Rudder-Position names where a write is reflected: a refused write names none, even when the view it read had one',
    fixedBy: 'dfbcd27',
    edits: [
      {
        file: 'apps/gateway/src/consistency/positions.ts',
        search: '      if (key === undefined || this.statusCode < 200 || this.statusCode >= 300) return;',
        replace: '      if (key === undefined) return;',
      },
    ],
    tests: ['apps/gateway/src/inputs/chat/chat.int.spec.ts'],
    only: 'no Rudder-Position',
  },
  {
    name: 'companion-folds-a-redelivery',
    area: 'read side',
    breaks: 'the read models fold each event once: an event Kafka redelivers, or the relay publishes twice, changes nothing',
    edits: [
      {
        file: 'apps/companion/src/projection/fold-events.ts',
        search: '      .filter((e) => fresh.has(e.id))\n',
        replace: '      .filter(() => true)\n',
      },
    ],
    tests: ['apps/companion/src/projection/fold-events.int.spec.ts'],
    only: 'comes again in a later batch',
  },

  // Approvals
  {
    name: 'denied-call-runs',
    area: 'approvals',
    breaks: 'a call a person denied never runs: its result gives the reason, and the model reads it',
    edits: [
      {
        file: 'libs/agent/src/tool-step.ts',
        search: "    case 'denied':\n",
        replace: "    case 'denied':\n      return 'run';\n",
      },
    ],
    tests: ['libs/agent/src/loop.unit.spec.ts'],
    only: 'denied, the call never runs',
  },
  {
    name: 'approval-decided-twice',
    area: 'approvals',
    breaks: 'a call waiting for approval is decided once: a later decision is refused not_awaiting',
    edits: [
      {
        file: 'libs/conversation/src/inputs/approval.ts',
        search: '      evolve: (state, data) => withAwaiting(state, state.awaiting.filter((a) => a.approval !== data.approval)),',
        replace: '      evolve: (state) => state,',
      },
    ],
    tests: ['libs/conversation/src/inputs/approval.unit.spec.ts'],
    only: 'a decision is stored once',
  },
  {
    name: 'approval-after-stop',
    area: 'approvals',
    breaks: "a stop closes the turn's waiting calls unrun: a decision after it is refused",
    edits: [
      {
        file: 'libs/conversation/src/inputs/approval.ts',
        search: '    if (state.ending !== null) return refused(',
        replace: '    if (false) return refused(',
      },
    ],
    tests: ['libs/conversation/src/inputs/approval.unit.spec.ts'],
    only: 'a turn asked to stop',
  },

  // Compaction
  {
    name: 'summary-request-over-budget',
    area: 'compaction',
    breaks: 'a summary request covers the oldest turns that fit its budget: it never passes maxTokens',
    edits: [
      {
        file: 'libs/agent/src/compaction.ts',
        search: '    if (tokens + more <= maxTokens) {',
        replace: '    if (true) {',
      },
    ],
    tests: ['libs/agent/src/compaction.unit.spec.ts'],
  },
  {
    name: 'compaction-takes-no-steers',
    area: 'compaction',
    breaks: 'a compaction at a step takes the steers that came during its summary request, for the step’s request',
    edits: [
      {
        file: 'libs/conversation/src/decide.ts',
        search: "  const compacted = events.some((e) => e.type === 'history.compacted') && turn.steps > 0 && closed;",
        replace: '  const compacted = false;',
      },
    ],
    tests: ['libs/conversation/src/decide.unit.spec.ts'],
    only: 'with a compaction at a step',
  },

  {
    name: 'compaction-never-due',
    area: 'compaction',
    breaks: 'when what a request would carry passes compactAt, the older earlier turns are summarised at the step, and the request carries the summary',
    edits: [
      {
        file: 'libs/agent/src/context.ts',
        search: '  if (budget.compactAt === null || carriedTokens(parts, budget) <= budget.compactAt) return null;',
        replace: '  return null;',
      },
    ],
    tests: ['libs/agent/src/loop.unit.spec.ts'],
    only: 'compacts at a step',
  },

  // The Responses door
  {
    name: 'continuation-jumps-the-queue',
    area: 'responses',
    breaks: 'a continuation of a response still queued queues behind it and winds nothing down',
    fixedBy: 'a4689e7',
    edits: [
      {
        file: 'libs/conversation/src/inputs/chat.ts',
        search: '  if (input.continues !== undefined && !state.queue.some((p) => p.id === input.continues)) return',
        replace: '  if (input.continues !== undefined) return',
      },
    ],
    tests: ['libs/conversation/src/inputs/chat.unit.spec.ts'],
    only: 'continuing',
  },
  {
    name: 'continuation-of-a-quiet-agent-winds-down',
    area: 'responses',
    breaks: 'a create on the running response of an agent that takes no steers is refused (409 conversation_locked), not winding it down',
    fixedBy: '0db6f87',
    edits: [
      {
        file: 'libs/conversation/src/inputs/chat.ts',
        search: '  if (input.ifSteerable === true && windDownMode(state, input) !== null && policy.maxTaken === 0) {',
        replace: '  if (false) {',
      },
    ],
    tests: ['libs/conversation/src/inputs/chat.unit.spec.ts'],
    only: 'ifSteerable',
  },
  {
    name: 'response-read-from-conversation-start',
    area: 'responses',
    breaks: "a retrieve, a cancel or a replay reads the conversation from right before the response's input, not from its start",
    fixedBy: 'd12e232',
    edits: [
      {
        file: 'apps/gateway/src/responses/response-reads.ts',
        search: "known.position === undefined ? 0 : Math.max(0, known.position - 1)",
        replace: '0',
      },
    ],
    tests: ['apps/gateway/src/responses/responses-reads.int.spec.ts'],
    only: 'reads from right before its input',
  },

  {
    name: 'door-forgets-if-steerable',
    area: 'responses',
    breaks: 'a create on the running response of an agent that takes no steers is 409 conversation_locked, nothing of it run: the door sends its follow-up with ifSteerable',
    fixedBy: '0db6f87',
    edits: [
      {
        file: 'apps/gateway/src/responses/responses-handler.ts',
        search: '{ continues: previous.input, ifLastInputId: previous.input, ifSteerable: true }',
        replace: '{ continues: previous.input, ifLastInputId: previous.input }',
      },
    ],
    tests: ['test/responses.e2e.spec.ts'],
    only: 'conversation_locked',
  },

  // MCP
  {
    name: 'mcp-call-without-call-id',
    area: 'mcp',
    breaks: "each tools/call carries the call id in _meta, the same on every run, so a server can make its side effect once",
    edits: [
      {
        file: 'apps/turn-worker/src/agents/mcp/mcp-tools.ts',
        search: '  [MCP_META.callId]: context.callId,\n',
        replace: '',
      },
    ],
    tests: ['apps/turn-worker/src/agents/mcp/mcp-tools.unit.spec.ts'],
    only: '_meta',
  },
  {
    name: 'mcp-error-result-as-answer',
    area: 'mcp',
    breaks: "an MCP server's error result is an error the model reads, not an answer",
    edits: [
      {
        file: 'apps/turn-worker/src/agents/mcp/mcp-tools.ts',
        search: '      if (result.isError) throw',
        replace: '      if (false) throw',
      },
    ],
    tests: ['apps/turn-worker/src/agents/mcp/mcp-tools.unit.spec.ts'],
    only: 'answers an error result',
  },
  {
    name: 'mcp-needs-approval-ignored',
    area: 'mcp',
    breaks: "an MCP server's tools that need approval wait for a person before they run",
    edits: [
      {
        file: 'apps/turn-worker/src/agents/mcp/mcp-tools.ts',
        search: "    needsApproval: Array.isArray(needsApproval) ? needsApproval.includes(listed.name) : needsApproval === true,",
        replace: '    needsApproval: false,',
      },
    ],
    tests: ['apps/turn-worker/src/agents/mcp/mcp-tools.unit.spec.ts'],
    only: 'wait for approval',
  },
  {
    name: 'mcp-allow-list-ignored',
    area: 'mcp',
    breaks: "an agent is offered only the MCP tools on its allow-list",
    edits: [
      {
        file: 'apps/turn-worker/src/agents/mcp/mcp-tools.ts',
        search: '  for (const name of allow) {',
        replace: '  for (const name of listed.map((t) => t.name)) {',
      },
    ],
    tests: ['apps/turn-worker/src/agents/mcp/mcp-tools.unit.spec.ts'],
    only: 'allow-list',
  },
];
