import { setTimeout as sleep } from 'node:timers/promises';
import { startInfrastructure, startLocalKafka, startLocalPostgres, type LocalKafka, type LocalPostgres } from '@rudder/dev-services';
import { Partitioners } from 'kafkajs';
import { createKafka, topicNames } from '@rudder/runtime';
import { RudderClient, RudderError } from '@rudder/client';
import type { TurnView } from '@rudder/contracts';
import { checkConversation, checkModelRequests, turnStatuses, type Category, type ConversationViews, type Finding, type SentInput } from './check';
import { startSoakStack, type Infra, type SoakStack, type SoakWorker } from './harness';
import { createPoisoner, type PoisonKind } from './poison';
import { createRng, type Rng } from './rng';
import { READ_TIMEOUT_MS, replay, transcript, WRITE_TIMEOUT_MS } from './views';

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
  /**
   * Also kill Kafka brokers and PostgreSQL (and start them again). They are then always local
   * processes of the soak's own (never KAFKA_BROKERS / DATABASE_URL: those are shared).
   */
  infraFaults?: boolean;
  /** Brokers of a Kafka the soak starts: 1 (default) or 3 (a broker fault then kills one node at a time). */
  brokers?: number;
  /**
   * PostgreSQL primaries (default 1): a database each (DATABASE_URLS), on servers of the soak's
   * own with `infraFaults` (a PostgreSQL fault then kills one primary at a time), else on the one server.
   */
  databases?: number;
  /** Keep sending and injecting past `seconds` until every kind of fault was injected this often (default 1)… */
  minFaults?: number;
  /** …and this many inputs were sent (default 0)… */
  minInputs?: number;
  /** …but no longer than this in all. Default `seconds` + 60. */
  maxSeconds?: number;
  /** Milliseconds between two actions, at most (at random from a tenth of it). Default 250. */
  paceMs?: number;
  log?: (line: string) => void;
};

/**
 * kill, pause, term: a worker SIGKILLed, SIGSTOPped past its session timeout, SIGTERMed;
 * relay-crash: a worker started with CRASH_AT=after-publish, dead after publishing events and
 * before marking them; poison: a record produced straight to agent.inputs that must be
 * dead-lettered (unparseable, huge, NUL text); broker: a Kafka broker SIGKILLed and started
 * again (one of three, or the only one); postgres: PostgreSQL SIGKILLed (postmaster and
 * backends) and started again.
 */
export type FaultKind = 'kill' | 'pause' | 'term' | 'relay-crash' | 'poison' | 'broker' | 'postgres';
const WORKER_FAULTS: FaultKind[] = ['kill', 'pause', 'term', 'relay-crash'];

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
  /** Injected faults by kind (infrastructure kinds only with `infraFaults`). */
  faults: Partial<Record<FaultKind, number>>;
  poison: Record<PoisonKind, number> & { deadLetters: number };
  brokers: number;
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
  let own: OwnInfra | undefined;
  let stopInfra = async () => undefined as unknown;
  const brokers = options.brokers ?? 1;
  if (options.infraFaults) {
    // Faults kill these: always processes of our own.
    const infraLog = (line: string) => log(`[infra] ${line}`);
    const [kafka, ...postgres] = await Promise.all([
      startLocalKafka({ log: infraLog, brokers, readyTimeoutMs: 120_000 }),
      ...Array.from({ length: options.databases ?? 1 }, () => startLocalPostgres({ log: infraLog })),
    ]);
    own = { kafka, postgres };
    infra = { kafkaBrokers: kafka.brokers, databaseUrl: postgres[0].databaseUrl, databaseServers: postgres.map((server) => server.databaseUrl) };
    stopInfra = () => Promise.all([kafka.stop(), ...postgres.map((server) => server.stop())]);
  } else if (options.kafkaBrokers && options.databaseUrl) infra = { kafkaBrokers: options.kafkaBrokers, databaseUrl: options.databaseUrl };
  else {
    const infrastructure = await startInfrastructure({ log: (line) => log(`[infra] ${line}`), brokerCount: brokers });
    infra = infrastructure;
    stopInfra = () => infrastructure.stop();
  }
  let stack: SoakStack | undefined;
  try {
    log(`seed ${seed}: starting the system with ${workersCount} worker(s)`);
    stack = await startSoakStack(infra, { workers: workersCount, sessionTimeoutMs, databases: options.databases ?? 1 });
    const client = new RudderClient({ baseUrl: stack.gatewayUrl });
    return await soak(stack, client, rng, { ...options, seed, conversationsCount, workersCount, sessionTimeoutMs, log, started, own, brokers });
  } finally {
    await stack?.stop().catch(() => undefined);
    await stopInfra().catch(() => undefined);
  }
}

/** The soak's own Kafka and PostgreSQL primaries (one or more), which its infrastructure faults kill. */
type OwnInfra = { kafka: LocalKafka; postgres: LocalPostgres[] };
type Settings = SoakOptions & {
  seed: number;
  conversationsCount: number;
  workersCount: number;
  sessionTimeoutMs: number;
  log: (line: string) => void;
  started: number;
  own: OwnInfra | undefined;
  brokers: number;
};

async function soak(stack: SoakStack, client: RudderClient, rng: Rng, settings: Settings): Promise<SoakReport> {
  const { log } = settings;
  const problems: string[] = [];
  const edgeFindings: Finding[] = [];
  const sent = { inputs: 0, chats: 0, steers: 0, withWait: 0, duplicates: 0, retries: 0 };
  const kinds: FaultKind[] = [...WORKER_FAULTS, 'poison', ...(settings.own ? (['broker', 'postgres'] as const) : [])];
  const faults: Partial<Record<FaultKind, number>> = Object.fromEntries(kinds.map((k) => [k, 0]));
  const topics = topicNames(stack.env.KAFKA_NAMESPACE);
  const poisoner = await createPoisoner(createKafka(stack.env.KAFKA_BROKERS, 'soak-poison'), topics);
  const conversations: Conversation[] = Array.from({ length: settings.conversationsCount }, (_, index) => ({
    index,
    key: keyOn(`soak-${settings.seed}/c${index}`, index % Number(stack.env.KAFKA_PARTITIONS), Number(stack.env.KAFKA_PARTITIONS)),
    busy: false,
    inputs: [],
    made: 0,
  }));
  // The window: `seconds`, stretched (to `maxSeconds` at most) until each kind of fault was
  // injected `minFaults` times and `minInputs` inputs were sent.
  const trafficStart = Date.now();
  const trafficEnd = trafficStart + settings.seconds * 1000;
  const hardEnd = trafficStart + (settings.maxSeconds ?? settings.seconds + 60) * 1000;
  const minFaults = settings.minFaults ?? 1;
  const targetsMet = () => kinds.every((k) => (faults[k] ?? 0) >= minFaults) && sent.inputs >= (settings.minInputs ?? 0);
  const windowOpen = () => Date.now() < trafficEnd || (!targetsMet() && Date.now() < hardEnd);
  const paceMs = settings.paceMs ?? 250;
  /**
   * The pause before the next broker or PostgreSQL fault of `kind`: at random between `min` and
   * `max` ms, or longer when fewer are needed — spread over what is left of `seconds` so that the
   * kind reaches `minFaults` within about 80 % of it (and then kept at that rate). An outage stalls
   * every conversation, so more outages than asked for only slow the run down.
   */
  const infraPause = (kind: FaultKind, min: number, max: number) => {
    const needed = minFaults - (faults[kind] ?? 0);
    const spread = needed > 0 ? (Math.max(0, trafficEnd - Date.now()) * 0.8) / needed : (settings.seconds * 1000 * 0.8) / Math.max(1, minFaults);
    const mean = Math.max((min + max) / 2, Math.min(spread, 4 * max));
    return rng.int(Math.max(min, Math.floor(mean / 2)), Math.floor((mean * 3) / 2));
  };

  // ---- sending -------------------------------------------------------------------------

  /**
   * One send of an input, sent again (same id) while the answer says nothing (no answer, 5xx);
   * at most 4 tries. `sent`: the gateway produced it but the worker had not decided within the
   * gateway's wait (503 naming the id): asked again once quiet.
   */
  type Delivery = 'accepted' | 'rejected' | 'sent' | 'uncertain' | 'refused';
  const deliver = async (input: SentInput, repeat: boolean): Promise<Delivery> => {
    // Patient enough for a database or broker outage of a few seconds.
    for (let attempt = 1; attempt <= 8; attempt++) {
      if (attempt > 1) {
        sent.retries++;
        await sleep(Math.min(250 * attempt, 2000));
      }
      const body = { id: input.id, text: input.text };
      const options = { signal: AbortSignal.timeout(WRITE_TIMEOUT_MS) };
      let answer: { id: string; turn: string | null; landed?: boolean };
      try {
        answer = input.kind === 'chat' ? await client.chat(input.key, body, options) : await client.steer(input.key, body, options);
      } catch (error) {
        // No answer at all (refused connection, reset, our timeout): it said nothing.
        if (!(error instanceof RudderError)) {
          log(`${input.kind} ${input.id}: ${String(error)}; sending again`);
          continue;
        }
        const details = error.details as { id?: string; reason?: string } | undefined;
        if (error.status === 503 && details?.id === input.id) return 'sent';
        // The worker's refusal (a full queue, here): the input is answered by it, once.
        if ([409, 412, 429].includes(error.status) && details?.reason !== undefined) {
          input.rejections.push(error.code);
          return 'rejected';
        }
        if (error.status >= 400 && error.status < 500) {
          const said = JSON.stringify({ code: error.code, message: error.message, details: error.details });
          edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `${repeat ? 'sent again' : 'sent'}: refused ${error.status} ${said}` });
          return 'refused';
        }
        log(`${input.kind} ${input.id}: ${error.status}; sending again`);
        continue;
      }
      if (answer.id !== input.id) edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `answered with id ${answer.id}` });
      if (input.outcome === 'rejected') edgeFindings.push({ category: 'inconsistent', key: input.key, input: input.id, message: `refused (${input.rejections}), then accepted when sent again` });
      if (input.kind === 'steer') {
        const decision = { turn: answer.turn, landed: answer.landed === true };
        if (repeat || input.decision) input.repeatedDecisions.push(decision);
        else input.decision = decision;
      }
      return 'accepted';
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
    const maxActions = Math.ceil(((hardEnd - trafficStart) / 1000) * 50);
    for (let actions = 0; actions < maxActions && windowOpen(); ) {
      await sleep(rng.int(Math.max(1, Math.floor(paceMs / 10)), paceMs));
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
  /** A worker started during a database or broker outage may exit before it gets partitions: tried again, thrice. */
  const startOne = async () => {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const worker = await stack.startWorker();
      if (worker.state === 'running') return void log(`worker ${worker.name} started`);
      log(`worker ${worker.name} was not assigned partitions (${worker.state})${attempt < 3 ? '; another' : ''}`);
      if (worker.state !== 'exited') await stopWorker(worker, 'SIGKILL', 10_000);
    }
    problems.push('three workers in a row were not assigned partitions within 60 s');
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
  /** A worker that kills itself after publishing events, before marking them (CRASH_AT=after-publish). */
  const relayCrash = async () => {
    const worker = await stack.startWorker({ CRASH_AT: 'after-publish' });
    log(`fault: ${worker.name} started with CRASH_AT=after-publish`);
    const crashed = await Promise.race([worker.exited.then(() => true), sleep(30_000).then(() => false)]);
    if (crashed && worker.count('crashing at after-publish') > 0) {
      faults['relay-crash']!++;
      log(`${worker.name} crashed after publishing, before marking`);
    } else {
      log(`${worker.name} did not crash at after-publish (${crashed ? 'exited' : 'still running after 30 s'}): not counted`);
      if (!crashed) await stopWorker(worker, 'SIGTERM', 30_000);
    }
  };
  const inject = async (kind: FaultKind) => {
    if (kind === 'relay-crash') {
      await relayCrash();
      await topUp();
      return;
    }
    await ensureSpare();
    const candidates = running();
    if (candidates.length < 2) {
      problems.push(`no spare worker for a ${kind}: skipped`);
      return;
    }
    const victim = rng.pick(candidates);
    faults[kind] = (faults[kind] ?? 0) + 1;
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
  /** The kind of `among` injected least so far (ties at random): every kind reaches `minFaults`. */
  const leastInjected = (among: FaultKind[]) => {
    const fewest = Math.min(...among.map((k) => faults[k] ?? 0));
    return rng.pick(among.filter((k) => (faults[k] ?? 0) === fewest));
  };
  /** Worker faults one at a time, always leaving a worker running. */
  const workerFaults = async () => {
    for (let n = 0; n < 100_000; n++) {
      await sleep(Math.min(rng.int(500, 2500), Math.max(trafficEnd - Date.now(), 200)));
      if (!windowOpen()) return;
      await inject(leastInjected(WORKER_FAULTS));
    }
  };
  const poisonFaults = async () => {
    for (let n = 0; n < 100_000; n++) {
      await sleep(rng.int(200, 3000));
      if (!windowOpen()) return;
      const conversation = rng.pick(conversations);
      try {
        const kind = await poisoner.inject(rng, conversation.key);
        faults.poison!++;
        log(`fault: poison (${kind}) on ${conversation.key}`);
      } catch (error) {
        log(`poison not produced (${String(error)}); again later`); // a broker outage: not injected
      }
    }
  };
  /**
   * One broker of three SIGKILLed (or the only one), down for a moment, started again — and the
   * next only once every replica is back in sync, so never two down at once.
   */
  const brokerFaults = async (kafka: LocalKafka) => {
    const admin = createKafka(kafka.brokers, 'soak-faults').admin();
    await admin.connect();
    const healed = async () => {
      for (let i = 0; i < 240; i++) {
        const metadata = await admin.fetchTopicMetadata({ topics: [...Object.values(topics), '__consumer_offsets'] }).catch(() => null);
        if (metadata?.topics.every((t) => t.partitions.every((p) => p.isr.length === kafka.nodes.length))) return true;
        await sleep(500);
      }
      return false;
    };
    try {
      for (let n = 0; n < 100_000; n++) {
        await sleep(infraPause('broker', 2000, 6000));
        if (!windowOpen()) return;
        if (!(await healed())) problems.push('the cluster did not heal (every replica in sync) within 120 s');
        const node = rng.pick(kafka.nodes);
        faults.broker!++;
        log(`fault: SIGKILL Kafka broker ${node.nodeId} (${node.brokers})`);
        await node.kill();
        await sleep(rng.int(500, 4000));
        for (let attempt = 1; attempt <= 3; attempt++) {
          const up = await node.restart().then(
            () => true,
            (error) => (log(`broker ${node.nodeId} did not start (${String(error).split('\n')[0]})`), false),
          );
          if (up) break;
          if (attempt === 3) problems.push(`broker ${node.nodeId} did not start again, three times`);
        }
        log(`Kafka broker ${node.nodeId} up again`);
      }
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  };
  const postgresFaults = async (primaries: LocalPostgres[]) => {
    for (let n = 0; n < 100_000; n++) {
      await sleep(infraPause('postgres', 8000, 20_000));
      if (!windowOpen()) return;
      faults.postgres!++;
      // One primary at a time: the conversations of the others go on meanwhile.
      const which = rng.int(0, primaries.length - 1);
      const postgres = primaries[which];
      log(`fault: SIGKILL PostgreSQL${primaries.length > 1 ? ` primary ${which}` : ''} (postmaster and backends)`);
      await postgres.kill();
      await sleep(rng.int(200, 2000));
      await postgres.restart().catch((error) => void problems.push(`PostgreSQL did not start again: ${String(error)}`));
      log('PostgreSQL up again');
    }
  };
  const faultLoops = () =>
    Promise.all([
      workerFaults(),
      poisonFaults(),
      ...(settings.own ? [brokerFaults(settings.own.kafka), postgresFaults(settings.own.postgres)] : []),
    ]);

  // ---- the model's requests, checked as they come -----------------------------------------

  // Each request carries its conversation's whole history: kept until the end, a long run's
  // requests would grow with the square of its length. Checked and let go every few seconds.
  const modelFindings: Finding[] = [];
  const modelFindingsSeen = new Set<string>();
  const keyOfText = (text: string) => conversations[Number(/^soak c(\d+) /.exec(text)?.[1] ?? -1)]?.key ?? '?';
  const checkModelRequestsSoFar = () => modelFindings.push(...checkModelRequests(stack.model.requests.splice(0), keyOfText, modelFindingsSeen));
  const modelChecks = setInterval(checkModelRequestsSoFar, 5000).unref();

  // ---- run, then wait for quiet and check ----------------------------------------------

  log(`seed ${settings.seed}: sending for ${settings.seconds} s over ${conversations.length} conversation(s), injecting faults`);
  await Promise.all([traffic(), faultLoops()]);
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

  const poisonCheck = await poisoner.check(60_000);
  await poisoner.stop();
  findings.push(...poisonCheck.findings);
  clearInterval(modelChecks);
  checkModelRequestsSoFar();
  findings.push(...modelFindings);
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
    poison: { ...poisoner.byKind, deadLetters: poisonCheck.deadLetters },
    brokers: settings.brokers,
    workerLog,
    quietAfterMs,
    durationMs: Date.now() - settings.started,
    findings: findings.slice(0, 100),
    problems,
  };
  report.ok = findings.length === 0 && problems.length === 0;
  return report;
}

/**
 * `base`, or `base-<n>` for the first n that puts it on `partition` of `partitions` (kafkajs'
 * default partitioner, murmur2, as every producer here uses): conversation i on partition
 * i mod P, so every partition carries traffic — a worker started with CRASH_AT=after-publish
 * publishes whichever partition it gets.
 */
function keyOn(base: string, partition: number, partitions: number): string {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, id) => ({ partitionId: id, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
  for (let n = 0; ; n++) {
    const key = n === 0 ? base : `${base}-${n}`;
    if (partitioner({ topic: 'any', partitionMetadata, message: { key, value: null } }) === partition) return key;
  }
}

/** Every conversation idle (nothing running, queued or steering) and its last input surely accepted in, twice in a row. */
async function waitForQuiet(client: RudderClient, conversations: Conversation[], sure: (input: SentInput) => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quietPolls = 0;
  for (let poll = 0; poll < 10_000 && Date.now() < deadline; poll++) {
    let quiet = true;
    for (const conversation of conversations) {
      if (conversation.inputs.length === 0) continue;
      // No answer, or an error: not quiet yet.
      const s = await client.status(conversation.key, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) }).catch(() => undefined);
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

async function gatherViews(client: RudderClient, conversation: Conversation): Promise<ConversationViews> {
  const { key } = conversation;
  // A view that did not answer 200 (a 404, an error, no answer) is null: the checks say what it misses.
  const read = <T>(view: (options: { signal: AbortSignal }) => Promise<T>) => view({ signal: AbortSignal.timeout(READ_TIMEOUT_MS) }).catch(() => null);
  const status = await read((options) => client.status(key, options));
  const stream = await replay(client, key, 0);
  const rows = await transcript(client, key);
  const turns = new Map<string, TurnView | null>();
  for (const { data } of stream) {
    if (data.type !== 'turn.started' || turns.has(data.data.turn)) continue;
    turns.set(data.data.turn, await read((options) => client.turn(key, data.data.turn, options)));
  }
  const turnOfInput = new Map<string, TurnView | null>();
  for (const input of conversation.inputs) turnOfInput.set(input.id, await read((options) => client.turnOf(key, input.id, options)));
  return { key, status, stream, transcript: rows, turns, turnOfInput };
}

const FAULT_NAMES: Record<FaultKind, string> = {
  kill: 'worker SIGKILL',
  pause: 'worker SIGSTOP',
  term: 'worker SIGTERM',
  'relay-crash': 'relay crash after publish',
  poison: 'poison records',
  broker: 'Kafka broker SIGKILL',
  postgres: 'PostgreSQL SIGKILL',
};

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
    `  faults injected:  ${Object.entries(report.faults).map(([kind, n]) => `${FAULT_NAMES[kind as FaultKind]} ${n}`).join(', ')}`,
    `  poison:           ${report.poison.unparseable} unparseable, ${report.poison.huge} huge, ${report.poison.nul} with NUL; ${report.poison.deadLetters} records on agent.inputs.dlq`,
    `  Kafka:            ${report.brokers} broker(s)`,
    `  worker logs:      fenced ${report.workerLog.fenced}, write already stored ${report.workerLog.alreadyStored}, conversation retried ${report.workerLog.conversationFailed}, dead-lettered ${report.workerLog.deadLettered}`,
  ];
  for (const problem of report.problems) lines.push(`  PROBLEM: ${problem}`);
  for (const f of report.findings) lines.push(`  ${f.category.toUpperCase()}: ${f.key}${f.input ? ` ${f.input}` : ''}: ${f.message}`);
  return lines.join('\n');
}
