import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { openAiModel, type ModelClient } from '@rudder/agent';
import type { AgentAffordances, Followups, Recap } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import type { CompanionMetrics } from '../metrics/companion-metrics';
import type { AffordanceStore } from './affordance-store';
import { FailureMemory } from './failure-memory';
import { affordanceRequest, parseAnswer, type AffordanceKind, type Made } from './model-requests';
import type { AffordanceSettings } from './settings';

/** How an ask was answered (`rudder_affordances_total{answer}`). */
export type AffordanceAnswer = 'model' | 'cache' | 'shared' | 'none' | 'failed' | 'backoff';
/** Why making one failed (`rudder_affordance_failures_total{reason}`): each failed model request, or database error, once. */
export type AffordanceFailure = 'model' | 'timeout' | 'garbage' | 'database' | 'unconfigured';

/** How often an ask waiting for another companion's model request looks at the row. */
const POLL_MS = 50;
/** A claim outlives its model request by this much (the answer's write after it): past that, it was abandoned. */
const LEASE_MARGIN_MS = 5000;

/**
 * Follow-up suggestions and recaps, made outside every turn (docs/architecture.md, "Beside
 * the turn"). An ask reads the conversation's last `turn.ended` position, and answers what was
 * made from the transcript up to it: from the shared row when it is made already (any
 * companion's), else by one model request — one per conversation, kind and position across
 * every ask: asks in this process share the one in flight (`flights`), and a companion that
 * finds another's live claim on the row waits for its answer instead of asking.
 *
 * It never throws: any failure (the model's error or 429, no answer within `timeoutMs`, an
 * answer that is not the JSON asked for, the database) answers empty, is logged and counted,
 * and is not stored in the row. A failed model request is remembered in this process for its
 * position a while (`failures`, `settings.backoff`): asks of it meanwhile answer empty without
 * asking (`backoff`), an answer another companion made meanwhile is served; past that the next
 * ask tries again. It reads the read models and its own table only, and takes none of the
 * fold's locks: a turn never waits for it.
 */
export class AffordanceMaker {
  private readonly flights = new Map<string, Promise<Made | null>>();
  /** A client per model name asked (the deployment's, and the ones agents name). */
  private readonly models = new Map<string, ModelClient>();
  private readonly failures: FailureMemory;

  constructor(
    private readonly store: AffordanceStore,
    private readonly settings: AffordanceSettings,
    private readonly metrics: CompanionMetrics,
    private readonly log: Log,
  ) {
    this.failures = new FailureMemory(settings.backoff, settings.now);
  }

  /** The client of the model named `name` on the settings' server (`openai`, no retries: a failure is answered empty at once); null when none is configured. */
  private modelNamed(name: string | undefined): ModelClient | null {
    const server = this.settings.model;
    if (!server) return null;
    const model = name ?? server.model;
    let client = this.models.get(model);
    if (!client) {
      // The client's own timeout is a backstop: the request's signal (timeoutMs) ends it first, so a timeout is told apart.
      client = openAiModel({ ...server, model, maxRetries: 0, timeoutMs: this.settings.timeoutMs + 1000 });
      this.models.set(model, client);
    }
    return client;
  }

  /** The first `n` suggestions made for the conversation as of its last ended turn; none when that failed or no turn ended. */
  async followups(key: string, n: number): Promise<Followups> {
    const made = await this.make(key, 'followups');
    return { suggestions: made?.kind === 'followups' ? made.suggestions.slice(0, n) : [] };
  }

  async recap(key: string): Promise<Recap> {
    const made = await this.make(key, 'recap');
    return { recap: made?.kind === 'recap' ? made.recap : '' };
  }

  private async make(key: string, kind: AffordanceKind): Promise<Made | null> {
    let position: number | null;
    try {
      position = await this.store.lastTurnEnded(key);
    } catch (error) {
      return this.failed(key, kind, 'database', error);
    }
    if (position === null) return this.answered(kind, 'none', null);
    const flight = `${kind}\n${key}\n${position}`;
    const running = this.flights.get(flight);
    if (running) {
      const made = await running;
      return this.answered(kind, made ? 'shared' : 'failed', made);
    }
    const started = this.fromRowOrModel(key, kind, position).finally(() => this.flights.delete(flight));
    this.flights.set(flight, started);
    return started;
  }

  /** The row's answer, another companion's when it is making it, or this one's model request. */
  private async fromRowOrModel(key: string, kind: AffordanceKind, asked: number): Promise<Made | null> {
    const deadline = Date.now() + this.settings.timeoutMs + LEASE_MARGIN_MS;
    let position = asked;
    let waited = false;
    try {
      for (;;) {
        const stored = await this.store.read(key, kind);
        // A row of a later position: a turn ended since this ask read it; that one is the last now.
        if (stored.position !== null && stored.position > position) position = stored.position;
        if (stored.state === 'made' && stored.position === position) return this.answered(kind, waited ? 'shared' : 'cache', stored.made);
        if (stored.state === 'claimed' && stored.position === position) {
          if (Date.now() > deadline) return this.failed(key, kind, 'timeout', new Error('another companion is still making it'));
          waited = true;
          await sleep(POLL_MS);
          continue;
        }
        // Its asker let go without an answer (it failed): this ask shares that failure, and remembers it.
        if (waited && stored.state === 'open' && stored.position === position) {
          this.failures.failed(key, kind, position);
          return this.answered(kind, 'failed', null);
        }
        if (this.failures.holds(key, kind, position)) return this.answered(kind, 'backoff', null);
        const claim = randomUUID();
        if (await this.store.claim(key, kind, position, claim, this.settings.timeoutMs + LEASE_MARGIN_MS)) return await this.ask(key, kind, position, claim);
        // Another claimed it between the read and the claim: read again.
      }
    } catch (error) {
      return this.failed(key, kind, 'database', error);
    }
  }

  /** The model request, under this process's claim of the row. */
  private async ask(key: string, kind: AffordanceKind, position: number, claim: string): Promise<Made | null> {
    const release = () => this.store.release(key, kind, claim).catch((error: unknown) => this.log.warn('could not release an affordance claim; it lapses', { conversation: key, kind, error: String(error) }));
    let transcript: Awaited<ReturnType<AffordanceStore['transcriptUpTo']>>;
    let agent: AgentAffordances;
    try {
      [transcript, agent] = await Promise.all([this.store.transcriptUpTo(key, position), this.store.agentAffordances(key)]);
    } catch (error) {
      await release();
      return this.failed(key, kind, 'database', error);
    }
    const model = this.modelNamed(agent.model);
    if (!model) {
      await release();
      return this.failed(key, kind, 'unconfigured', new Error('no model: set OPENAI_API_KEY (or OPENAI_BASE_URL)'));
    }
    // The conversation's agent's instructions for this kind, else the deployment's.
    const prompt = (kind === 'followups' ? agent.followupsPrompt : agent.recapPrompt) ?? this.settings.prompts[kind];
    const signal = AbortSignal.timeout(this.settings.timeoutMs);
    let content: string;
    try {
      content = (await model.reply({ messages: affordanceRequest(kind, prompt, transcript), tools: [], signal })).content;
    } catch (error) {
      await release();
      return this.failed(key, kind, signal.aborted ? 'timeout' : 'model', error, position);
    }
    const made = parseAnswer(kind, content);
    if (!made) {
      await release();
      return this.failed(key, kind, 'garbage', new Error(`the model answered ${JSON.stringify(content.slice(0, 200))}`), position);
    }
    this.failures.succeeded(key, kind);
    await this.store.fulfil(key, kind, claim, made);
    return this.answered(kind, 'model', made);
  }

  private answered(kind: AffordanceKind, answer: AffordanceAnswer, made: Made | null): Made | null {
    this.metrics.affordanceAnswered(kind, answer);
    return made;
  }

  /** Logs and counts a failure; a failed model request (given its `position`) is remembered too (`failures`), and the log says for how long (`backoffMs`). */
  private failed(key: string, kind: AffordanceKind, reason: AffordanceFailure, error: unknown, position?: number): null {
    const backoffMs = position === undefined ? undefined : this.failures.failed(key, kind, position);
    this.log.warn(`could not make ${kind === 'followups' ? 'follow-up suggestions' : 'a recap'}; answered empty`, {
      conversation: key,
      kind,
      reason,
      error: error instanceof Error ? error.message : String(error),
      ...(backoffMs === undefined ? {} : { backoffMs }),
    });
    this.metrics.affordanceFailed(kind, reason);
    this.answered(kind, 'failed', null);
    return null;
  }
}
