// A conversation's event stream (`GET …/events`) for the measuring scripts: every stored event as it arrives, with
// `seen` (when it was read), handed to `onEvent`; token events are left out. `signal` closes it.
export async function followConversation(base, onEvent, signal = undefined) {
  const stream = await fetch(`${base}/events`, { headers: { accept: 'text/event-stream' }, signal });
  (async () => {
    let buffer = '';
    for await (const chunk of stream.body) {
      buffer += Buffer.from(chunk).toString();
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).join('');
        if (!data || /^event: ?token$/m.test(block)) continue;
        onEvent({ ...JSON.parse(data), seen: Date.now() });
      }
    }
  })().catch(() => undefined);
}
