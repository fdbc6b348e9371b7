import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { bundleOptions, packagesLoaded } from './bundle';

/** What only the worker (and the companion's model requests) may load: the model client, its HTTP client, the tokenizer. */
const AGENT_ONLY = ['openai', 'undici', 'gpt-tokenizer'];

describe("the gateway's build", () => {
  it('loads neither the model client, nor its HTTP client, nor the tokenizer', async () => {
    // As `npm run build` bundles it (scripts/build.ts), in memory; the web chat script is left out.
    const { metafile } = await build({ ...bundleOptions('apps/gateway', ''), write: false });
    expect(packagesLoaded(metafile).filter((p) => AGENT_ONLY.includes(p))).toEqual([]);
    expect(Object.keys(metafile.inputs).filter((file) => AGENT_ONLY.some((p) => file.includes(`node_modules/${p}/`)))).toEqual([]);
  });
});
