import type { ConversationEvent, ConversationStatus, TranscriptItem, TurnView } from '@rudder/contracts';

/** An input the soak sent (once, however often it was sent again), in the order sent per conversation. */
export type SentInput = {
  key: string;
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  /** Its place among the conversation's inputs: each was sent after the one before was answered. */
  order: number;
  /**
   * accepted: the worker took it (202/200); rejected: the worker refused it (409/412/429 with
   * its reason: it is answered by that refusal, once); uncertain: no answer said either way (it
   * may or may not have been produced); refused: an error at the edge, nothing produced.
   */
  outcome: 'accepted' | 'rejected' | 'uncertain' | 'refused';
  /** The error codes of the worker's refusals as answered (the first send and any sent again). */
  rejections: string[];
  /** A steer's decision as the first answer gave it (or the answer to asking again, after a 503). */
  decision: { turn: string | null; landed: boolean } | null;
  /** The decisions the duplicates of a steer were answered with. */
  repeatedDecisions: { turn: string | null; landed: boolean }[];
};

/** What the system shows of one conversation once it is quiet. */
export type ConversationViews = {
  key: string;
  status: ConversationStatus | null;
  /** The SSE replay from Last-Event-ID 0, tokens left out. */
  stream: { id: string | undefined; event: string; data: ConversationEvent }[];
  transcript: TranscriptItem[];
  /** GET turns/{id} for each turn the stream shows (null: 404). */
  turns: Map<string, TurnView | null>;
  /** GET turns?input={id} for each input sent (null: 404). */
  turnOfInput: Map<string, TurnView | null>;
};

export type Category = 'lost' | 'duplicated' | 'reordered' | 'inconsistent';
export type Finding = { category: Category; key: string; input?: string; message: string };

/**
 * Checks the views against what was sent: every accepted input answered exactly once (a chat
 * as the prompt of exactly one turn; a steer taken by exactly one turn or the prompt of exactly
 * one, never both), no event, turn or transcript row twice, turns started in the order their
 * prompts were accepted and never overlapping, a steer taken only by the turn that was running
 * when it was accepted (the one its decision named).
 */
export function checkConversation(sent: readonly SentInput[], views: ConversationViews): Finding[] {
  const findings: Finding[] = [];
  const { key } = views;
  const add = (category: Category, message: string, input?: string) => findings.push({ category, key, input, message });
  const events = views.stream.map((m) => m.data);

  // The stream: each event once, positions increasing, the SSE id is the position.
  const eventIds = new Set<string>();
  let lastPosition = -Infinity;
  for (const message of views.stream) {
    const event = message.data;
    if (eventIds.has(event.id)) add('duplicated', `event ${event.id} (${event.type}) twice on the stream`);
    eventIds.add(event.id);
    if (event.position <= lastPosition) add('reordered', `event at position ${event.position} (${event.type}) after position ${lastPosition}`);
    lastPosition = Math.max(lastPosition, event.position);
    if (message.id !== String(event.position)) add('inconsistent', `SSE id ${message.id} for an event at position ${event.position}`);
    if (message.event !== event.type) add('inconsistent', `SSE event name ${message.event} for a ${event.type}`);
    if (event.conversation !== key) add('inconsistent', `an event of ${event.conversation} on the stream of ${key}`);
  }

  // Inputs accepted into the log.
  const acceptedAt = new Map<string, number>();
  const acceptedCount = new Map<string, number>();
  const decisions = new Map<string, { turn: string | null; landed: boolean; position: number }[]>();
  for (const event of events) {
    if (event.type === 'input.accepted') {
      const id = event.data.input.id;
      acceptedCount.set(id, (acceptedCount.get(id) ?? 0) + 1);
      if (!acceptedAt.has(id)) acceptedAt.set(id, event.position);
    }
    if (event.type === 'steer.accepted') {
      const list = decisions.get(event.data.input.id) ?? [];
      list.push({ turn: event.data.turn, landed: event.data.landed, position: event.position });
      decisions.set(event.data.input.id, list);
    }
  }
  for (const [id, count] of acceptedCount) if (count > 1) add('duplicated', `input.accepted ${count} times`, id);
  const rejectedCount = new Map<string, number>();
  for (const event of events) if (event.type === 'input.rejected') rejectedCount.set(event.data.input.id, (rejectedCount.get(event.data.input.id) ?? 0) + 1);
  for (const [id, count] of rejectedCount) {
    if (count > 1) add('duplicated', `input.rejected ${count} times`, id);
    if (acceptedCount.has(id)) add('duplicated', `both accepted and rejected`, id);
  }
  // input.delivered (where the system records it): once per answered input, naming its turn.
  const delivered = new Map<string, string[]>();
  for (const event of events) if (event.type === 'input.delivered') delivered.set(event.data.input.id, [...(delivered.get(event.data.input.id) ?? []), event.data.turn]);
  const recordsDelivery = delivered.size > 0;
  for (const [id, list] of decisions) if (list.length > 1) add('duplicated', `steer.accepted ${list.length} times`, id);

  // Turns: started once, ended once, from the stream.
  type Turn = { id: string; prompt: { id: string; text: string }; started: number; ended: number | null; status: string | null; steered: { id: string; text: string }[]; taken: { id: string; position: number }[]; replies: Map<number, string> };
  const turns = new Map<string, Turn>();
  for (const event of events) {
    switch (event.type) {
      case 'turn.started': {
        if (turns.has(event.data.turn)) add('duplicated', `turn ${event.data.turn} started twice`, event.data.prompt.id);
        else turns.set(event.data.turn, { id: event.data.turn, prompt: event.data.prompt, started: event.position, ended: null, status: null, steered: [], taken: [], replies: new Map() });
        break;
      }
      case 'turn.ended': {
        const turn = turns.get(event.data.turn);
        if (!turn) add('inconsistent', `turn ${event.data.turn} ended without starting`);
        else if (turn.ended !== null) add('duplicated', `turn ${turn.id} ended twice`, turn.prompt.id);
        else Object.assign(turn, { ended: event.position, status: event.data.status, steered: event.data.steered });
        break;
      }
      case 'steer.taken': {
        const turn = turns.get(event.data.turn);
        if (!turn) add('inconsistent', `steer ${event.data.input.id} taken by turn ${event.data.turn}, which never started`, event.data.input.id);
        else turn.taken.push({ id: event.data.input.id, position: event.position });
        break;
      }
      case 'model.replied': {
        const turn = turns.get(event.data.turn);
        if (!turn) add('inconsistent', `a reply of turn ${event.data.turn}, which never started`);
        else if (turn.replies.has(event.data.step)) add('duplicated', `turn ${turn.id} replied twice at step ${event.data.step}`, turn.prompt.id);
        else turn.replies.set(event.data.step, event.data.content);
        break;
      }
      default:
        break;
    }
  }
  const toolEnds = new Map<string, number>();
  for (const event of events) if (event.type === 'tool.ended') toolEnds.set(`${event.data.turn}/${event.data.callId}`, (toolEnds.get(`${event.data.turn}/${event.data.callId}`) ?? 0) + 1);
  for (const [call, count] of toolEnds) if (count > 1) add('duplicated', `tool result of ${call} stored ${count} times`);

  const ordered = [...turns.values()].sort((a, b) => a.started - b.started);
  for (const turn of ordered) {
    if (turn.ended === null) add('lost', `turn ${turn.id} never ended`, turn.prompt.id);
    const takenIds = turn.taken.map((t) => t.id);
    const steeredIds = turn.steered.map((s) => s.id);
    if (turn.ended !== null && JSON.stringify(takenIds) !== JSON.stringify(steeredIds)) {
      add('inconsistent', `turn ${turn.id} took ${JSON.stringify(takenIds)} (steer.taken) but ended with steered ${JSON.stringify(steeredIds)}`, turn.prompt.id);
    }
    for (const taken of turn.taken) {
      if (taken.position < turn.started || (turn.ended !== null && taken.position > turn.ended)) {
        add('reordered', `steer taken at position ${taken.position}, outside turn ${turn.id} (${turn.started}..${turn.ended})`, taken.id);
      }
    }
  }

  // Turns never overlap, and start in the order their prompts were accepted.
  for (let i = 1; i < ordered.length; i++) {
    const before = ordered[i - 1];
    const after = ordered[i];
    if (before.ended === null || before.ended > after.started) add('reordered', `turn ${after.id} started (${after.started}) while turn ${before.id} still ran (ended ${before.ended})`, after.prompt.id);
    const a = acceptedAt.get(before.prompt.id);
    const b = acceptedAt.get(after.prompt.id);
    if (a !== undefined && b !== undefined && a > b) add('reordered', `turn for ${after.prompt.id} (accepted at ${b}) started after the turn for ${before.prompt.id} (accepted at ${a})`, after.prompt.id);
  }

  // Each input sent: answered exactly once, in its place.
  const byId = new Map(sent.map((input) => [input.id, input]));
  const sentOrder = sent.filter((input) => input.outcome === 'accepted' && acceptedAt.has(input.id)).sort((a, b) => a.order - b.order);
  for (let i = 1; i < sentOrder.length; i++) {
    const a = acceptedAt.get(sentOrder[i - 1].id)!;
    const b = acceptedAt.get(sentOrder[i].id)!;
    if (a > b) add('reordered', `accepted at ${b}, before ${sentOrder[i - 1].id} (at ${a}), which was sent and answered before it`, sentOrder[i].id);
  }
  const promptTurnsInSentOrder: { input: SentInput; turn: Turn }[] = [];
  for (const input of sent) {
    const prompts = ordered.filter((t) => t.prompt.id === input.id);
    const takes = ordered.filter((t) => t.taken.some((s) => s.id === input.id) || t.steered.some((s) => s.id === input.id));
    const answers = prompts.length + takes.length;
    const describe = `${input.kind} "${input.text}": prompt of ${prompts.length} turn(s) [${prompts.map((t) => t.id)}], taken by ${takes.length} [${takes.map((t) => t.id)}]`;
    const refusals = rejectedCount.get(input.id) ?? 0;
    if (input.outcome === 'refused' && (acceptedCount.has(input.id) || refusals > 0)) add('inconsistent', `refused at the edge, yet decided in the log`, input.id);
    if (input.outcome === 'accepted' && answers === 0) add('lost', `${describe}${acceptedAt.has(input.id) ? '' : '; never accepted into the log'}`, input.id);
    if (input.outcome === 'accepted' && refusals > 0) add('inconsistent', `answered as accepted, but the log rejected it`, input.id);
    if (input.outcome === 'rejected' && refusals === 0) add('inconsistent', `answered ${input.rejections.join(', ')}, but the log has no input.rejected`, input.id);
    if (input.outcome === 'accepted' && input.rejections.length > 0) add('inconsistent', `accepted, and refused (${input.rejections}) when sent again`, input.id);
    if (new Set(input.rejections).size > 1) add('inconsistent', `refused differently when sent again: ${input.rejections.join(', ')}`, input.id);
    if (refusals > 0 && answers > 0) add('duplicated', `rejected, and yet ${describe}`, input.id);
    if (answers > 1) add('duplicated', describe, input.id);
    if (recordsDelivery && answers === 1) {
      const turnsDelivered = delivered.get(input.id) ?? [];
      const answeredBy = (prompts[0] ?? takes[0]).id;
      if (turnsDelivered.length === 0) add('inconsistent', `answered by turn ${answeredBy} without input.delivered`, input.id);
      if (turnsDelivered.length > 1) add('duplicated', `input.delivered ${turnsDelivered.length} times (${turnsDelivered})`, input.id);
      if (turnsDelivered.length === 1 && turnsDelivered[0] !== answeredBy) add('inconsistent', `delivered to turn ${turnsDelivered[0]}, answered by ${answeredBy}`, input.id);
    }
    if (answers >= 1 && !acceptedAt.has(input.id)) add('inconsistent', `answered without input.accepted`, input.id);
    if (input.kind === 'chat' && takes.length > 0) add('inconsistent', `a chat taken as a steered message: ${describe}`, input.id);
    if (prompts.length >= 1) {
      if (prompts[0].prompt.text !== input.text) add('inconsistent', `the prompt's text "${prompts[0].prompt.text}" is not the text sent`, input.id);
      if (input.outcome === 'accepted') promptTurnsInSentOrder.push({ input, turn: prompts[0] });
    }
    if (input.kind === 'steer') {
      const logged = decisions.get(input.id)?.[0];
      if (acceptedAt.has(input.id) && !logged) add('inconsistent', `a steer accepted without a decision (steer.accepted)`, input.id);
      for (const answer of [input.decision, ...input.repeatedDecisions]) {
        if (answer && logged && (answer.landed !== logged.landed || answer.turn !== logged.turn)) {
          add('inconsistent', `answered ${JSON.stringify(answer)}, but the log decided ${JSON.stringify({ turn: logged.turn, landed: logged.landed })}`, input.id);
        }
      }
      if (logged && takes.length === 1) {
        const taker = takes[0];
        if (!logged.landed || logged.turn !== taker.id) add('reordered', `taken by turn ${taker.id}, but decided ${JSON.stringify(logged)}`, input.id);
        if (logged.position < taker.started || (taker.ended !== null && logged.position > taker.ended)) {
          add('reordered', `taken by turn ${taker.id} (${taker.started}..${taker.ended}), which was not running when it was accepted (${logged.position})`, input.id);
        }
      }
      if (logged && logged.landed && prompts.length === 1 && takes.length === 0) {
        const landedOn = turns.get(logged.turn ?? '');
        if (landedOn?.status === 'completed') add('inconsistent', `landed on turn ${logged.turn}, which completed without taking it; answered as a turn of its own`, input.id);
      }
      if (logged && !logged.landed && takes.length > 0) add('inconsistent', `decided landed: false, yet taken by ${takes.map((t) => t.id)}`, input.id);
    }
  }
  // Prompts in the order they were sent (and so accepted).
  promptTurnsInSentOrder.sort((a, b) => a.input.order - b.input.order);
  for (let i = 1; i < promptTurnsInSentOrder.length; i++) {
    const before = promptTurnsInSentOrder[i - 1];
    const after = promptTurnsInSentOrder[i];
    if (after.turn.started < before.turn.started) add('reordered', `its turn started before the turn of ${before.input.id}, which was sent before it`, after.input.id);
  }
  for (const turn of ordered) if (!byId.has(turn.prompt.id)) add('inconsistent', `turn ${turn.id} answers ${turn.prompt.id}, which the soak never sent`, turn.prompt.id);

  // The turn views agree with the stream.
  for (const turn of ordered) {
    const view = views.turns.get(turn.id);
    if (!view) {
      add('lost', `GET turns/${turn.id}: not found`, turn.prompt.id);
      continue;
    }
    if (view.status === 'running') add('inconsistent', `turn ${turn.id} still running in its view`, turn.prompt.id);
    if (view.prompt.id !== turn.prompt.id) add('inconsistent', `turn ${turn.id}'s view has prompt ${view.prompt.id}`, turn.prompt.id);
    if (JSON.stringify(view.steered.map((s) => s.id)) !== JSON.stringify(turn.steered.map((s) => s.id))) {
      add('inconsistent', `turn ${turn.id}'s view has steered ${JSON.stringify(view.steered)}, the stream ${JSON.stringify(turn.steered)}`, turn.prompt.id);
    }
    const replies = [...turn.replies.entries()].sort((a, b) => a[0] - b[0]).map(([, content]) => content).filter((c) => c !== '');
    if (view.content !== replies.join('\n\n')) add('inconsistent', `turn ${turn.id}'s content ${JSON.stringify(view.content)} is not its replies ${JSON.stringify(replies)}`, turn.prompt.id);
  }
  for (const input of sent) {
    if (input.outcome !== 'accepted') continue;
    const view = views.turnOfInput.get(input.id);
    const expected = ordered.find((t) => t.prompt.id === input.id) ?? ordered.find((t) => t.steered.some((s) => s.id === input.id));
    if (expected && view?.id !== expected.id) add('inconsistent', `GET turns?input= answers ${view?.id ?? '404'}, the stream says turn ${expected.id}`, input.id);
  }

  // The transcript: each row once; each answered input's user row once, flagged steered when taken.
  const rowIds = new Map<string, number>();
  for (const row of views.transcript) rowIds.set(`${row.role}:${row.id}`, (rowIds.get(`${row.role}:${row.id}`) ?? 0) + 1);
  for (const [row, count] of rowIds) if (count > 1) add('duplicated', `transcript row ${row} ${count} times`, row.replace(/^user:/, ''));
  for (const input of sent) {
    const rows = views.transcript.filter((r) => r.role === 'user' && r.id === input.id);
    const prompt = ordered.find((t) => t.prompt.id === input.id);
    const taker = ordered.find((t) => t.taken.some((s) => s.id === input.id));
    const answeredBy = prompt ?? taker;
    if (!answeredBy) continue;
    if (rows.length === 0) add('lost', `no user row in the transcript`, input.id);
    for (const row of rows) {
      if (row.text !== input.text) add('inconsistent', `transcript row text ${JSON.stringify(row.text)}`, input.id);
      if (row.steered !== (prompt === undefined)) add('inconsistent', `transcript row steered: ${row.steered}`, input.id);
      if (row.turn !== answeredBy.id) add('inconsistent', `transcript row of turn ${row.turn}, answered by ${answeredBy.id}`, input.id);
    }
  }
  for (const turn of ordered) {
    const rows = views.transcript.filter((r) => r.role === 'assistant' && r.turn === turn.id).map((r) => r.text);
    const replies = [...turn.replies.entries()].sort((a, b) => a[0] - b[0]).map(([, content]) => content).filter((c) => c !== '');
    if (rows.length < replies.length) add('lost', `turn ${turn.id} has ${rows.length} assistant rows for ${replies.length} replies`, turn.prompt.id);
    if (rows.length > replies.length) add('duplicated', `turn ${turn.id} has ${rows.length} assistant rows for ${replies.length} replies`, turn.prompt.id);
  }

  // Quiet: nothing running or pending.
  const status = views.status;
  if (!status) add('inconsistent', 'no status');
  else {
    if (status.running) add('inconsistent', `still running turn ${status.running.turn} after the system went quiet`);
    for (const item of status.queue) add('lost', `still queued (${item.kind}) after the system went quiet`, item.id);
    for (const item of status.steering) add('lost', `still steering after the system went quiet`, item.id);
  }
  return findings;
}

/** Turn statuses as the stream ended them (completed, failed, …), for the report. */
export function turnStatuses(views: ConversationViews): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { data } of views.stream) if (data.type === 'turn.ended') counts[data.data.status] = (counts[data.data.status] ?? 0) + 1;
  return counts;
}

/**
 * What the model was asked: no request holds a user message twice (every text the soak sends
 * is unique, so a repeat is a message duplicated in the turn's history), and no tool call's
 * result twice. Requests may repeat after a crash; each one must still be well formed.
 */
export function checkModelRequests(
  requests: readonly { body: { messages: readonly { role: string; content?: unknown; tool_call_id?: string }[] } }[],
  keyOf: (text: string) => string,
  /** Findings already reported (by an earlier call over earlier requests): not reported again. */
  seen = new Set<string>(),
): Finding[] {
  const findings: Finding[] = [];
  for (const request of requests) {
    const texts = request.body.messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    const calls = request.body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id ?? '');
    for (const [what, list] of [['user message', texts], ['tool result', calls]] as const) {
      const counts = new Map<string, number>();
      for (const item of list) counts.set(item, (counts.get(item) ?? 0) + 1);
      for (const [item, count] of counts) {
        const finding = `a model request holds the ${what} ${JSON.stringify(item)} ${count} times`;
        if (count > 1 && !seen.has(finding)) {
          seen.add(finding);
          findings.push({ category: 'duplicated', key: keyOf(texts.at(-1) ?? item), message: finding });
        }
      }
    }
  }
  return findings;
}
