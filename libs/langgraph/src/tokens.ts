import { BaseCallbackHandler } from '@langchain/core/callbacks/base';

/**
 * The tokens of the agent's model, streamed to the step asking it: only while Rudder's durable
 * model waits on it, so a nested agent's model (run by a tool, never during the agent's own
 * model request) streams nothing to the turn.
 *
 * A handler that prefers streaming makes `invoke` of a chat model stream its reply (as
 * LangGraph's own "messages" stream mode does), with the usage the server sends. Without it,
 * ChatOpenAI's `streaming: true` estimates the usage with tiktoken, whose encodings it fetches
 * from tiktoken.pages.dev: a call out that hangs where there is no internet.
 */
export class TokenSink extends BaseCallbackHandler {
  name = 'RudderTokens';
  lc_prefer_streaming = true;
  private sink: ((text: string) => void) | null = null;

  async during<T>(sink: (text: string) => void, ask: () => Promise<T>): Promise<T> {
    this.sink = sink;
    try {
      return await ask();
    } finally {
      this.sink = null;
    }
  }

  override handleLLMNewToken(token: string): void {
    if (token !== '') this.sink?.(token);
  }
}
