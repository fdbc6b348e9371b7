import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

/**
 * The web chat's script, the browser code in ./browser bundled by esbuild into one ES module.
 * `npm run build` (scripts/build.ts) bundles it once and compiles it into the gateway's dist
 * as `RUDDER_WEB_APP`; run from the sources (`npm start`, the tests) the gateway bundles it
 * on the first request, in memory.
 */
declare const RUDDER_WEB_APP: string | undefined;

export const webAppBuildOptions = (): BuildOptions & { write: false } => ({
  entryPoints: [fileURLToPath(new URL('./browser/main.ts', import.meta.url))],
  tsconfig: fileURLToPath(new URL('./browser/tsconfig.json', import.meta.url)),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  write: false,
  logLevel: 'warning',
});

/** Bundles the browser code (what scripts/build.ts and the gateway from sources both do). */
export async function bundleWebApp(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build(webAppBuildOptions());
  return result.outputFiles[0]!.text;
}

let script: Promise<string> | undefined;
export function webAppScript(): Promise<string> {
  if (typeof RUDDER_WEB_APP === 'string') return Promise.resolve(RUDDER_WEB_APP);
  script ??= bundleWebApp().catch((error: unknown) => {
    script = undefined;
    throw error;
  });
  return script;
}

/** The page: the layout the script fills in; `data-auth` tells it whether to ask for a token. */
export const webPage = (authRequired: boolean): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rudder — web chat</title>
<style>
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1d2330;background:#f5f6f8}
header{display:flex;gap:1rem;align-items:center;padding:.6rem 1rem;background:#1d2b3a;color:#fff}header h1{font-size:1.1rem;margin:0}
#mode{opacity:.8;font-size:.85rem}#token-field{margin-left:auto}#token-field input{margin-left:.4rem}
.layout{display:grid;grid-template-columns:14rem 1fr 20rem;gap:1rem;padding:1rem;min-height:calc(100vh - 3rem)}
nav,main,aside{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:.8rem}
h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.05em;color:#5b6575;margin:.2rem 0 .6rem}
ul,ol{list-style:none;margin:0;padding:0}#conversations a{display:block;padding:.25rem .4rem;border-radius:4px;color:inherit;text-decoration:none;word-break:break-all}
#conversations a[aria-current]{background:#e6eefc;font-weight:600}#open-form{display:flex;gap:.3rem;margin-bottom:.8rem}#open-form input{flex:1;min-width:0}
main{display:flex;flex-direction:column;gap:.6rem}#title{font-weight:600}#turn-state,#agent{font-size:.85rem;color:#5b6575}#turn-state[data-running=true]{color:#a55a00}
#transcript{flex:1;display:flex;flex-direction:column;gap:.5rem;overflow:auto}
.message{max-width:80%;padding:.45rem .7rem;border-radius:10px;white-space:pre-wrap}
.message.user{align-self:flex-end;background:#2f6fde;color:#fff}.message.assistant{align-self:flex-start;background:#eef0f3}
.message.steered{background:#f0a23a;color:#1d2330}.message.live{border:1px dashed #9aa3b0;background:#fff}
.badge{display:inline-block;font-size:.7rem;font-weight:700;text-transform:uppercase;background:#1d2330;color:#fff;border-radius:3px;padding:0 .3rem;margin-right:.4rem}
#compose{display:flex;gap:.4rem}#compose textarea{flex:1;min-height:2.6rem;resize:vertical;font:inherit}
button{font:inherit;padding:.3rem .7rem;border:1px solid #b7bfcb;border-radius:5px;background:#fff;cursor:pointer}
#send{background:#2f6fde;color:#fff;border-color:#2f6fde}#steer{background:#f0a23a;border-color:#d98c20}#stop{color:#b3261e}
.pending{display:flex;flex-wrap:wrap;gap:.3rem;align-items:center;padding:.35rem 0;border-bottom:1px solid #eef0f3}.pending .text{flex:1}
.pending .kind,.empty{font-size:.75rem;color:#5b6575;width:100%}.pending[draggable=true]{cursor:grab}.pending textarea.edit{flex:1;min-width:10rem;min-height:2.4rem;font:inherit}
.pending .note{width:100%;font-size:.8rem;color:#b3261e}.message .note{display:block;margin-top:.2rem;font-size:.8rem;font-style:italic}.turn-controls{margin-top:.3rem}.turn-controls button{font-size:.8rem;padding:.1rem .5rem}
#answers li{overflow-wrap:anywhere;font-size:.85rem;padding:.3rem 0;border-bottom:1px solid #eef0f3}
#answers .refused{color:#b3261e}#answers .ok{color:#1e6b35}
#recap{background:#fff7e0;border:1px solid #f0d48a;border-radius:8px;padding:.45rem .7rem;font-size:.9rem}#recap b{margin-right:.4rem}
#plan{margin-bottom:.8rem}#plan li{display:flex;gap:.4rem;padding:.2rem 0;font-size:.9rem}#plan .n{color:#5b6575;min-width:1.4rem}#plan [data-status=done] .text{text-decoration:line-through;color:#5b6575}
#plan [data-status=in_progress] .text{font-weight:600}#plan .mark{width:1rem}
#schedules{margin-bottom:.8rem;padding:0;list-style:none}#schedules li{display:flex;flex-wrap:wrap;gap:.2rem .5rem;align-items:baseline;padding:.2rem 0;font-size:.9rem}#schedules .when{color:#5b6575;font-size:.8rem}
#suggestions{display:flex;flex-wrap:wrap;gap:.4rem}#suggestions button{border-color:#2f6fde;color:#2f6fde;border-radius:14px;font-size:.85rem}
.message.approval{align-self:flex-start;background:#f3f6ee;border:1px solid #c9d6b8;font-size:.9rem}
.approval[role=group]{align-self:flex-start;max-width:80%;min-width:22rem;padding:.5rem .7rem;border-radius:10px;background:#fffaf0;border:2px solid #e0a526}
.approval[data-state=approved]{border-color:#5a9b6b;background:#f3f9f4}.approval[data-state=denied],.approval[data-state=timed-out]{border-color:#c96a63;background:#fdf4f3}.approval[data-state=closed]{border-color:#9aa3b0;background:#f5f6f8}
.approval .head code{font-weight:700}.approval pre.arguments{margin:.35rem 0;padding:.35rem .5rem;background:#fff;border:1px solid #dde1e7;border-radius:5px;font-size:.85rem;white-space:pre-wrap;overflow-wrap:anywhere}
.approval .actions[hidden]{display:none}.approval .actions{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center}.approval .actions details{width:100%;font-size:.85rem}.approval textarea.arguments{width:100%;font:.85rem ui-monospace,monospace}
.approval .deny-group{display:flex;gap:.4rem;align-items:center}.approval .reason{display:flex;gap:.3rem;align-items:center;font-size:.85rem;color:#5b6575}.approval .reason input{width:11rem}
.approval button.approve{background:#1e6b35;color:#fff;border-color:#1e6b35}.approval button.deny{color:#b3261e;border-color:#b3261e}.approval button:disabled{opacity:.55;cursor:default}
.approval .expires,.approval .by{font-size:.8rem;color:#5b6575}.approval .outcome:empty{display:none}.approval .outcome{margin-top:.2rem}
</style></head>
<body data-auth="${authRequired ? 'required' : 'open'}">
<header><h1>Rudder</h1><span id="mode"></span>
<label id="token-field" hidden>Token<input id="token" type="password" autocomplete="off" spellcheck="false"></label></header>
<div class="layout">
<nav><h2>Conversations</h2>
<form id="open-form"><input id="key" placeholder="conversation key" aria-label="conversation key" required maxlength="200"><button>Open</button></form>
<ul id="conversations"></ul></nav>
<main><div id="title">Open a conversation</div><div id="agent" aria-live="polite"></div><div id="turn-state"></div>
<div id="recap" hidden></div>
<ol id="transcript" aria-live="polite"></ol>
<div id="suggestions" aria-label="suggested next messages"></div>
<form id="compose" hidden><textarea id="text" aria-label="message" placeholder="Enter sends a chat, Ctrl+Enter steers the running turn"></textarea>
<button id="send" type="submit">Send</button><button id="steer" type="button" title="joins the running turn at its next step">Steer</button><button id="stop" type="button">Stop</button></form></main>
<aside><section id="plan-panel" hidden><h2>Plan</h2><ol id="plan" aria-label="the agent's plan"></ol></section><section id="schedules-panel" hidden><h2>Schedules</h2><ul id="schedules" aria-label="the conversation's schedules"></ul></section><h2>Pending</h2><ul id="pending"></ul><h2>Answers</h2><ol id="answers"></ol></aside>
</div>
<script type="module" src="/app.js"></script>
</body></html>`;
