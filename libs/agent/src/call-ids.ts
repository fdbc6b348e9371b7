import { isStorableText, type ToolCall } from '@rudder/contracts';

/**
 * Call ids come from the model, and each must name one call of its step: it is the call's once
 * key in the log and the id its result answers. An id that is empty, repeated within the
 * reply, over-long or not storable is replaced by `call_<step>_<index>` (in the stored reply
 * too, so the model reads its calls and their results under the same ids).
 */
export function ownCallIds(calls: readonly ToolCall[], step: number): ToolCall[] {
  const seen = new Set<string>();
  return calls.map((call, index) => {
    let id = call.id;
    if (id === '' || id.length > 200 || !isStorableText(id) || seen.has(id)) {
      id = `call_${step}_${index}`;
      while (seen.has(id) || calls.some((c) => c.id === id)) id += '_';
    }
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
}
