import { setTimeout as sleep } from 'node:timers/promises';
import { startInfrastructure } from '@rudder/dev-services';
import { checkConversation, checkModelRequests, turnStatuses, type Category, type ConversationViews, type Finding, type SentInput } from './check';
import { startSoakStack, type Infra, type SoakStack, type SoakWorker } from './harness';
import { createSoakClient, type SoakClient } from './http';
import { createRng, type Rng } from './rng';

export type SoakOptions = {
  /** How long inputs are sent and faults injected. */
  seconds: number;
  conversations?: number;
  workers?: number;
  seed?: number;
  /** Kafka and PostgreSQL to use; else KAFKA_BROKERS / DATABASE_URL, else started here (startInfrastructure). */
  kafkaBrokers?: string;
  databaseUrl?: string;
  /** WORKER_SESSION_TIMEOUT_MS of the workers; a pause lasts longer than this. Default 4000. */
  sessionTimeoutMs?: number;
  /** How long to wait for the system to go quiet after the last input. Default 120 s. */
  quietTimeoutMs?: number;
  log?: (line: string) => void;
};

export type FaultKind = 'kill' | 'pause' | 'term';

export type SoakReport = {
  ok: boolean;
  seed: number;
  seconds: number;
  /** How long inputs were sent: `seconds`, or longer when a kind of fault had not been injected yet. */
  trafficSeconds: number;
  conversations: number;
  workers: number;
  sent: {
    /** Distinct inputs (ids) sent. */
    inputs: number;
    chats: number;
    steers: number;
    /** Inputs whose text asks for the wait tool. */
    withWait: number;
    /** Extra sends of an id already sent, on purpose. */
    duplicates: number;
    /** Sends again after an answer that said nothing (timeout, 5xx). */
    retries: number;
    accepted: number;
    /** Refused by the worker (a full queue): answered by that refusal. */
    rejected: number;
    uncertain: number;
    refused: number;
  };
  /** undecidedAt503: inputs (chats or steers) the worker had not decided on within the gateway's wait. */
  steerDecisions: { landed: number; ownTurn: number; undecidedAt503: number };
  /** events: the SSE replays' events by type, all conversations together. */
  answered: { turns: number; steersTaken: number; statuses: Record<string, number>; events: Record<string, number> };
  lost: number;
  duplicated: number;
  reordered: number;
  inconsistent: number;
  faults: Record<FaultKind, number>;
  /** Lines of the workers' logs: fenced zombies, collisions, retried conversations. */
  workerLog: { fenced: number; alreadyStored: number; conversationFailed: number; deadLettered: number };
  /** From the last input sent until every conversation was quiet. */
  quietAfterMs: number;
  durationMs: number;
  /** What failed, first 100 findings. */
  findings: Finding[];
  /** Trouble of the soak itself (a worker that never got partitions, no quiet in time). */
  problems: string[];
};

type Conversation = { index: number; key: string; busy: boolean; inputs: SentInput[]; made: number };

/**
 * A randomized soak of the whole system: for `seconds`, chats (some calling the wait tool)
 * and steers over `conversations`, some sent twice on purpose, while turn workers are
 * SIGKILLed, SIGSTOPped past their session timeout, and SIGTERMed, and replaced. Then it
 * waits for quiet and checks, from the public views, that every accepted input was answered
 * exactly once and in order (see check.ts).
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
  const seed = (options.seed ?? Math.floor(Math.random() * 2 ** 31)) >>> 0;
  const conversationsCount = options.conversations ?? 4;
  const workersCount = Math.max(1, options.workers ?? 2);
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 4000;
  const log = options.log ?? (() => undefined);
  const rng = createRng(seed);

  let infra: Infra;
  let stopInfra = async () => undefined as unknown;
  if (options.kafkaBrokers && options.databaseUrl) infra = { kafkaBrokers: options.kafkaBrokers, databaseUrl: options.databaseUrl };
  else {
    const infrastructure = await startInfrastructure({ log: (line) => log(`[infra] ${line}`) });
    infra = infrastructure;
    stopInfra = () => infrastructure.stop();
  }
  let stack: SoakStack | undefined;
  try {
    log(`seed ${seed}: starting the system with ${workersCount} worker(s)`);
    stack = await startSoakStack(infra, { workers: workersCount, sessionTimeoutMs });
    const client = createSoakClient(stack.gatewayUrl);
    return await soak(stack, client, rng, { ...options, seed, conversationsCount, workersCount, sessionTimeoutMs, log, started });
  } finally {
    await stack?.stop().catch(() => undefined);
    await stopInfra().catch(() => undefined);
  }
}

type Settings = SoakOptions & { seed: number; conversationsCount: number; workersCount: number; sessionTimeoutMs: number; log: (line: string) => void; started: number };

async function soak(stack: SoakStack, client: SoakClient, rng: Rng, settings: Settings): Promise<SoakReport> {
  const { log } = settings;
  const problems: string[] = [];
  const edgeFindings: Finding[] = [];
  const sent = { inputs: 0, chats: 0, steers: 0, withWait: 0, duplicates: 0, retries: 0 };
  const faults: Record<FaultKind, number> = { kill: 0, pause: 0, term: 0 };
  const conversations: Conversation[] = Array.from({ length: settings.conversationsCount }, (_, index) => ({
    index,
    key: `soak-${settings.seed}/c${index}`,
    busy: false,
    inputs: [],
    made: 0,
  }));
  // The window: `seconds`, stretched (by at most 60 s) until each kind of fault was injected once.
  const trafficStart = Date.now();
  const trafficEnd = trafficStart + settings.seconds * 1000;
  const firstFaults: FaultKind[] = rng.shuffle(['kill', 'pause', 'term']);
  const windowOpen = () => Date.now() < trafficEnd || (firstFaults.length > 0 && Date.now() < trafficEnd + 60_000);

  // ---- sending -------------------------------------------------------------------------

  /**
   * One send of an input, sent again (same id) while the answer says nothing (no answer, 5xx);
   * at most 4 tries. `sent`: the gateway produced it but the worker had not decided within the
   * gateway's wait (503 naming the id): asked again once quiet.
   */
  type Delivery = 'accepted' | 'rejected' | 'sent' | 'uncertain' | 'refused';
  const deliver = async (input: SentInput, repeat: boolean): Promise<Delivery> => {
    for (let attempt = 1; attempt <= 4; attempt++) {
      if (attempt > 1) {
        sent.retries++;
        await sleep(250 * attempt);
      }
      const answer = input.kind === 'chat' ? await client.chat(input.key, input.id, input.text) : await client.steer(input.key, input.id, input.text);
      const details = answer.error?.details as { id?: string; reason?: string } | undefined;
      if (answer.status >= 200 && answer.status < 300 && answer.body) {
        if (answer.body.id !== input.id) edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `answered with id ${answer.body.id}` });
        if (input.outcome === 'rejected') edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `refused (${input.rejections}), then accepted when sent again` });
        if (input.kind === 'steer') {
          const { turn, landed } = answer.body as { turn: string | null; landed: boolean };
          if (repeat || input.decision) input.repeatedDecisions.push({ turn, landed });
          else input.decision = { turn, landed };
        }
        return 'accepted';
      }
      if (answer.status === 503 && details?.id === input.id) return 'sent';
      // The worker's refusal (a full queue, here): the input is answered by it, once.
      if ([409, 412, 429].includes(answer.status) && details?.reason !== undefined) {
        input.rejections.push(answer.error!.code);
        return 'rejected';
      }
      if (answer.status >= 400 && answer.status < 500) {
        edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `${repeat ? 'sent again' : 'sent'}: refused ${answer.status} ${JSON.stringify(answer.error)}` });
        return 'refused';
      }
      log(`${input.kind} ${input.id}: ${answer.status || answer.failure}; sending again`);
    }
    return 'uncertain';
  };
  /** Inputs produced but not decided within the gateway's wait: asked again once quiet. */
  const undecided = new Set<SentInput>();

  const newInput = (conversation: Conversation): SentInput => {
    const n = ++conversation.made;
    const kind = rng.chance(0.35) ? 'steer' : 'chat';
    const roll = rng.next();
    const waitShare = kind === 'chat' ? 0.45 : 0.2;
    const slowShare = kind === 'chat' ? 0.15 : 0.1;
    const tail = roll < waitShare ? ` wait ${rng.int(100, 1500)}` : roll < waitShare + slowShare ? ` slow ${rng.int(50, 800)}` : '';
    if (tail.startsWith(' wait')) sent.withWait++;
    sent.inputs++;
    sent[kind === 'chat' ? 'chats' : 'steers']++;
    const input: SentInput = {
      key: conversation.key,
      id: `c${conversation.index}-${kind}-${n}`,
      kind,
      text: `soak c${conversation.index} #${n} ${kind}${tail}`,
      order: conversation.inputs.length,
      outcome: 'uncertain',
      decision: null,
      repeatedDecisions: [],
      rejections: [],
    };
    conversation.inputs.push(input);
    return input;
  };

  const settle = (input: SentInput, outcomes: Delivery[]) => {
    if (outcomes.includes('accepted') && outcomes.includes('rejected')) {
      edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `sent twice at once: accepted and refused (${input.rejections})` });
    }
    const order: Delivery[] = ['accepted', 'rejected', 'sent', 'refused', 'uncertain'];
    const best = order.find((o) => outcomes.includes(o))!;
    if (best === 'sent') undecided.add(input);
    // A produced input not yet decided counts as accepted for the order until it is asked again.
    input.outcome = best === 'sent' ? 'accepted' : best;
  };

  /** One action on a conversation; the next one on it starts after this one is answered. */
  const act = async (conversation: Conversation) => {
    const roll = rng.next();
    const earlier = conversation.inputs.filter((i) => (i.outcome === 'accepted' || i.outcome === 'rejected') && !undecided.has(i));
    if (roll < 0.1 && earlier.length > 0) {
      // An input sent before, again, as a client retrying late would.
      const input = rng.pick(earlier.slice(-8));
      sent.duplicates++;
      await deliver(input, true);
      return;
    }
    const input = newInput(conversation);
    if (roll < 0.18) {
      // Sent twice at once: both race the companion's view of the id.
      sent.duplicates++;
      settle(input, await Promise.all([deliver(input, false), deliver(input, true)]));
      return;
    }
    settle(input, [await deliver(input, false)]);
    if (roll < 0.26 && (input.outcome === 'accepted' || input.outcome === 'rejected') && !undecided.has(input)) {
      // Sent again right after its answer: the companion has likely not seen it yet.
      sent.duplicates++;
      await deliver(input, true);
    }
  };

  const traffic = async () => {
    const inflight = new Set<Promise<void>>();
    const maxActions = Math.ceil((settings.seconds + 60) * 50);
    for (let actions = 0; actions < maxActions && windowOpen(); ) {
      await sleep(rng.int(20, 250));
      const idle = conversations.filter((c) => !c.busy);
      if (idle.length === 0) continue;
      const conversation = rng.pick(idle);
      conversation.busy = true;
      actions++;
      const action = act(conversation)
        .catch((error) => void problems.push(`sending to ${conversation.key} failed: ${String(error)}`))
        .finally(() => {
          conversation.busy = false;
          inflight.delete(action);
        });
      inflight.add(action);
    }
    await Promise.all(inflight);
  };

  // ---- faults --------------------------------------------------------------------------

  const running = () => stack.workers.filter((w) => w.state === 'running');
  const live = () => stack.workers.filter((w) => w.state !== 'exited' && w.state !== 'stopping');
  const startOne = async () => {
    const worker = await stack.startWorker();
    if (worker.state !== 'running') problems.push(`worker ${worker.name} was not assigned partitions within 60 s (${worker.state})`);
    else log(`worker ${worker.name} started`);
  };
  /** Another running worker besides the victim, so at least one always runs. */
  const ensureSpare = async () => {
    for (let i = 0; i < 3 && running().length < 2; i++) await startOne();
  };
  const topUp = async () => {
    for (let i = 0; i < 3 && live().length < settings.workersCount; i++) await startOne();
  };
  const stopWorker = async (worker: SoakWorker, signal: NodeJS.Signals, graceMs: number) => {
    worker.state = 'stopping';
    worker.signal(signal);
    const exited = await Promise.race([worker.exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (!exited) {
      problems.push(`worker ${worker.name} did not exit within ${graceMs} ms of ${signal}; killed`);
      worker.signal('SIGKILL');
      await worker.exited;
    }
  };
  const inject = async (kind: FaultKind) => {
    await ensureSpare();
    const candidates = running();
    if (candidates.length < 2) {
      problems.push(`no spare worker for a ${kind}: skipped`);
      return;
    }
    const victim = rng.pick(candidates);
    faults[kind]++;
    if (kind === 'kill') {
      log(`fault: SIGKILL ${victim.name}`);
      await stopWorker(victim, 'SIGKILL', 10_000);
    } else if (kind === 'term') {
      log(`fault: SIGTERM ${victim.name}`);
      await stopWorker(victim, 'SIGTERM', 30_000);
    } else {
      const pauseMs = settings.sessionTimeoutMs + rng.int(500, 2500);
      log(`fault: SIGSTOP ${victim.name} for ${pauseMs} ms`);
      victim.state = 'paused';
      victim.signal('SIGSTOP');
      await sleep(pauseMs);
      victim.signal('SIGCONT');
      if (victim.state === 'paused') victim.state = 'running';
    }
    await topUp();
  };
  const faultLoop = async () => {
    // Each kind once first (in a random order), then at random.
    for (let n = 0; n < 1000; n++) {
      await sleep(Math.min(rng.int(500, 2500), Math.max(trafficEnd - Date.now(), 200)));
      if (!windowOpen()) return;
      const kind = firstFaults[0] ?? rng.pick<FaultKind>(['kill', 'pause', 'term']);
      await inject(kind);
      if (firstFaults[0] === kind && faults[kind] > 0) firstFaults.shift();
    }
  };

  // ---- run, then wait for quiet and check ----------------------------------------------

  log(`seed ${settings.seed}: sending for ${settings.seconds} s over ${conversations.length} conversation(s), injecting faults`);
  await Promise.all([traffic(), faultLoop()]);
  const lastSent = Date.now();
  const trafficSeconds = Math.round((lastSent - trafficStart) / 100) / 10;
  log(`sent ${sent.inputs} inputs (${sent.duplicates} duplicates); faults ${JSON.stringify(faults)}; waiting for quiet`);
  for (const worker of stack.workers) if (worker.state === 'paused') worker.signal('SIGCONT');
  if (running().length === 0) await startOne();

  // Inputs answered 503 (sent, not decided in time): ask again for the decision, once quiet.
  const quiet = await waitForQuiet(client, conversations, (i) => i.outcome === 'accepted' && !undecided.has(i), settings.quietTimeoutMs ?? 120_000);
  const quietAfterMs = Date.now() - lastSent;
  if (!quiet) problems.push(`the system did not go quiet within ${settings.quietTimeoutMs ?? 120_000} ms`);
  const undecidedAt503 = undecided.size;
  for (const input of undecided) {
    sent.retries++;
    input.decision = null;
    const outcome = await deliver(input, false);
    if (outcome === 'accepted' || outcome === 'rejected') input.outcome = outcome;
    else edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `sent (503), and still no decision once quiet: ${outcome}` });
  }

  const findings: Finding[] = [...edgeFindings];
  const statuses: Record<string, number> = {};
  let turns = 0;
  let steersTaken = 0;
  const eventCounts: Record<string, number> = {};
  for (const conversation of conversations) {
    const views = await gatherViews(client, conversation);
    findings.push(...checkConversation(conversation.inputs, views));
    for (const [status, count] of Object.entries(turnStatuses(views))) statuses[status] = (statuses[status] ?? 0) + count;
    turns += views.turns.size;
    steersTaken += views.stream.filter((m) => m.data.type === 'steer.taken').length;
    for (const { data } of views.stream) eventCounts[data.type] = (eventCounts[data.type] ?? 0) + 1;
  }

  findings.push(...checkModelRequests(stack.model.requests, (text) => `soak-${settings.seed}/${/^soak (c\d+) /.exec(text)?.[1] ?? '?'}`));
  const all = conversations.flatMap((c) => c.inputs);
  const steers = all.filter((i) => i.kind === 'steer' && i.outcome === 'accepted' && i.decision);
  const count = (category: Category) => findings.filter((f) => f.category === category).length;
  const workerLog = { fenced: 0, alreadyStored: 0, conversationFailed: 0, deadLettered: 0 };
  for (const worker of stack.workers) {
    workerLog.fenced += worker.count('fenced');
    workerLog.alreadyStored += worker.count('a write was already stored');
    workerLog.conversationFailed += worker.count('conversation failed');
    workerLog.deadLettered += worker.count('dead-lettered');
  }
  const report: SoakReport = {
    ok: false,
    seed: settings.seed,
    seconds: settings.seconds,
    trafficSeconds,
    conversations: conversations.length,
    workers: settings.workersCount,
    sent: {
      ...sent,
      accepted: all.filter((i) => i.outcome === 'accepted').length,
      rejected: all.filter((i) => i.outcome === 'rejected').length,
      uncertain: all.filter((i) => i.outcome === 'uncertain').length,
      refused: all.filter((i) => i.outcome === 'refused').length,
    },
    steerDecisions: { landed: steers.filter((s) => s.decision!.landed).length, ownTurn: steers.filter((s) => !s.decision!.landed).length, undecidedAt503 },
    answered: { turns, steersTaken, statuses, events: eventCounts },
    lost: count('lost'),
    duplicated: count('duplicated'),
    reordered: count('reordered'),
    inconsistent: count('inconsistent'),
    faults,
    workerLog,
    quietAfterMs,
    durationMs: Date.now() - settings.started,
    findings: findings.slice(0, 100),
    problems,
  };
  report.ok = findings.length === 0 && problems.length === 0;
  return report;
}

/** Every conversation idle (nothing running, queued or steering) and its last input surely accepted in, twice in a row. */
async function waitForQuiet(client: SoakClient, conversations: Conversation[], sure: (input: SentInput) => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quietPolls = 0;
  for (let poll = 0; poll < 10_000 && Date.now() < deadline; poll++) {
    let quiet = true;
    for (const conversation of conversations) {
      if (conversation.inputs.length === 0) continue;
      const status = await client.status(conversation.key);
      const s = status.body;
      const lastSure = conversation.inputs.findLastIndex(sure);
      const lastIn = s?.lastInputId ? conversation.inputs.findIndex((i) => i.id === s.lastInputId) : -1;
      if (!s || s.running || s.queue.length > 0 || s.steering.length > 0 || lastIn < lastSure) {
        quiet = false;
        break;
      }
    }
    quietPolls = quiet ? quietPolls + 1 : 0;
    if (quietPolls >= 2) return true;
    await sleep(500);
  }
  return false;
}

async function gatherViews(client: SoakClient, conversation: Conversation): Promise<ConversationViews> {
  const status = await client.status(conversation.key);
  const stream = await client.replay(conversation.key, 0);
  const transcript = await client.transcript(conversation.key);
  const turns = new Map<string, import('@rudder/contracts').TurnView | null>();
  for (const { data } of stream) {
    if (data.type !== 'turn.started' || turns.has(data.data.turn)) continue;
    const answer = await client.turn(conversation.key, data.data.turn);
    turns.set(data.data.turn, answer.status === 200 ? answer.body! : null);
  }
  const turnOfInput = new Map<string, import('@rudder/contracts').TurnView | null>();
  for (const input of conversation.inputs) {
    const answer = await client.turnOf(conversation.key, input.id);
    turnOfInput.set(input.id, answer.status === 200 ? answer.body! : null);
  }
  return { key: conversation.key, status: status.body ?? null, stream, transcript, turns, turnOfInput };
}

/** The report as a few lines for people. */
export function formatReport(report: SoakReport): string {
  const lines = [
    `soak ${report.ok ? 'PASSED' : 'FAILED'} — seed ${report.seed}, ${report.trafficSeconds} s of sending and faults, ${report.conversations} conversation(s), ${report.workers} worker(s) (${Math.round(report.durationMs / 1000)} s in all, quiet ${Math.round(report.quietAfterMs / 100) / 10} s after the last input)`,
    `  inputs sent:      ${report.sent.inputs} (${report.sent.chats} chats, ${report.sent.steers} steers, ${report.sent.withWait} with a wait tool call); accepted ${report.sent.accepted}, refused by the worker (queue full) ${report.sent.rejected}, uncertain ${report.sent.uncertain}, refused at the edge ${report.sent.refused}`,
    `  duplicates sent:  ${report.sent.duplicates} (and ${report.sent.retries} retries after an answer that said nothing)`,
    `  steer decisions:  ${report.steerDecisions.landed} landed on a running turn, ${report.steerDecisions.ownTurn} a turn of their own${report.steerDecisions.undecidedAt503 ? `; ${report.steerDecisions.undecidedAt503} inputs undecided within the gateway's wait (503), asked again once quiet` : ''}`,
    `  answers:          ${report.answered.turns} turns ${JSON.stringify(report.answered.statuses)}, ${report.answered.steersTaken} steers taken`,
    `  events replayed:  ${Object.entries(report.answered.events).map(([type, n]) => `${type} ${n}`).join(', ')}`,
    `  lost:             ${report.lost}`,
    `  duplicated:       ${report.duplicated}`,
    `  reordered:        ${report.reordered}`,
    `  inconsistent:     ${report.inconsistent}`,
    `  faults injected:  SIGKILL ${report.faults.kill}, SIGSTOP ${report.faults.pause}, SIGTERM ${report.faults.term}`,
    `  worker logs:      fenced ${report.workerLog.fenced}, write already stored ${report.workerLog.alreadyStored}, conversation retried ${report.workerLog.conversationFailed}, dead-lettered ${report.workerLog.deadLettered}`,
  ];
  for (const problem of report.problems) lines.push(`  PROBLEM: ${problem}`);
  for (const f of report.findings) lines.push(`  ${f.category.toUpperCase()}: ${f.key}${f.input ? ` ${f.input}` : ''}: ${f.message}`);
  return lines.join('\n');
}
