import { Agent, interceptors, request, type Dispatcher } from 'undici';

/**
 * The `fetch` the model client sends its requests with: undici's `request` over a keep-alive
 * pool of its own, answered as a standard `Response`. Node's global `fetch` is undici too, but
 * runs the whole Fetch standard for every request (a `Request` built and cloned, its body
 * extracted into a web stream, the fetch controller's steps); measured on the anchors' model,
 * 16 requests at a time, that cost the calling process 0.9 ms of CPU more per streamed reply
 * (docs/performance.md, "Measured choices in the code"). Redirects are followed (up to 3), as fetch
 * would. A body other than a string or bytes (a form, a stream: no chat request sends one) goes
 * through the global `fetch`, unchanged.
 */
export function modelFetch(dispatcher: Dispatcher = sharedDispatcher()): typeof fetch {
  return async (input, init = {}) => {
    const body = init.body ?? undefined;
    if (input instanceof Request || !(body === undefined || typeof body === 'string' || body instanceof Uint8Array)) {
      return fetch(input, init);
    }
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const answer = await request(String(input), {
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body,
      signal: init.signal ?? undefined,
      dispatcher,
    });
    const answered = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) answered.append(name, one);
    }
    // A status without a body (204, 304) must not be given one, not even an empty stream.
    const bodiless = answer.statusCode === 204 || answer.statusCode === 304 || init.method === 'HEAD';
    if (bodiless) answer.body.resume();
    return new Response(bodiless ? null : answer.body, { status: answer.statusCode, statusText: answer.statusText, headers: answered });
  };
}

let shared: Dispatcher | undefined;
/** One pool for every model client of the process, as the global fetch has one (and its keep-alive defaults). */
function sharedDispatcher(): Dispatcher {
  return (shared ??= new Agent().compose(interceptors.redirect({ maxRedirections: 3 })));
}
