import type { ModelRequest } from './script';

/**
 * A named point where scripted replies wait until the test opens it. A reply naming a gate
 * (`ScriptedReply.gate`) is held there — before its first byte, or after some streamed chunks —
 * so "a steer sent while the model writes" is true by construction, not by a window of time.
 *
 * Contract: a gate starts closed. `open()` releases every held reply and lets later ones pass
 * until `close()` arms it again. `reached(n)` resolves with the n-th request (1-based, counted
 * over the gate's life) that arrived at the gate, whether it was held or passed; a held reply
 * whose client disconnects is dropped, but still counted as reached.
 */
export type Gate = {
  readonly name: string;
  /** Resolves once `count` requests (default 1) have reached the gate, with the count-th of them. */
  reached(count?: number): Promise<ModelRequest>;
  open(): void;
  close(): void;
  state(): GateState;
};

/** What the control route answers: `GET /gates/{name}`. */
export type GateState = { name: string; open: boolean; reached: number; held: number };

export type Gates = {
  get(name: string): Gate;
  /**
   * Waits at the gate for `request`: resolves true once it is open, false if `signal` aborts
   * first (the client gave up, or the server stops).
   */
  pass(name: string, request: ModelRequest, signal: AbortSignal): Promise<boolean>;
  /** Releases every held reply as if its client had gone (for stop()). */
  dropAll(): void;
};

type Entry = {
  gate: Gate;
  isOpen: boolean;
  arrivals: ModelRequest[];
  held: Set<(open: boolean) => void>;
  watchers: { count: number; resolve: (request: ModelRequest) => void }[];
};

export function createGates(): Gates {
  const entries = new Map<string, Entry>();

  const entry = (name: string): Entry => {
    const existing = entries.get(name);
    if (existing) return existing;
    const created: Entry = {
      isOpen: false,
      arrivals: [],
      held: new Set(),
      watchers: [],
      gate: {
        name,
        reached(count = 1) {
          const arrived = created.arrivals[count - 1];
          if (arrived) return Promise.resolve(arrived);
          return new Promise((resolve) => created.watchers.push({ count, resolve }));
        },
        open() {
          created.isOpen = true;
          for (const release of [...created.held]) release(true);
          created.held.clear();
        },
        close() {
          created.isOpen = false;
        },
        state: () => ({ name, open: created.isOpen, reached: created.arrivals.length, held: created.held.size }),
      },
    };
    entries.set(name, created);
    return created;
  };

  const arrive = (e: Entry, request: ModelRequest) => {
    e.arrivals.push(request);
    const due = e.watchers.filter((w) => w.count <= e.arrivals.length);
    e.watchers = e.watchers.filter((w) => w.count > e.arrivals.length);
    for (const watcher of due) watcher.resolve(e.arrivals[watcher.count - 1]);
  };

  return {
    get: (name) => entry(name).gate,
    pass(name, request, signal) {
      const e = entry(name);
      arrive(e, request);
      if (signal.aborted) return Promise.resolve(false);
      if (e.isOpen) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const release = (open: boolean) => {
          signal.removeEventListener('abort', onAbort);
          e.held.delete(release);
          resolve(open);
        };
        const onAbort = () => release(false);
        e.held.add(release);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    dropAll() {
      for (const e of entries.values()) for (const release of [...e.held]) release(false);
    },
  };
}
