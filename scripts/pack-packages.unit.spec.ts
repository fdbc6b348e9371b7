import { describe, expect, it } from 'vitest';
import { packedManifest, withExtensions, type Manifest } from './pack-packages';

const versions = { '@rudder/contracts': '0.1.0', '@rudder/runtime': '0.1.0' };
const engines = { node: '>=20.19' };

describe("a packed package's manifest", () => {
  const workspace: Manifest = {
    name: '@rudder/runtime',
    private: true,
    type: 'module',
    version: '0.1.0',
    exports: { '.': './src/index.ts', './kafka': './src/kafka/index.ts', './testing': './src/testing.ts' },
    dependencies: { '@rudder/contracts': '*', '@nestjs/common': '11.2.10', kafkajs: '2.2.4', zod: '4.6.7' },
    devDependencies: { '@types/node': '20.19.43', '@types/pg': '8.23.1', vitest: '4.1.12' },
  };

  it('names dist/ in its exports (types, then the JavaScript), and leaves out the workspace-only ones', () => {
    expect(packedManifest(workspace, versions, engines).exports).toEqual({
      '.': { types: './dist/index.d.ts', default: './dist/index.js' },
      './kafka': { types: './dist/kafka/index.d.ts', default: './dist/kafka/index.js' },
    });
  });

  it('pins sibling packages to the versions packed, makes what the app shares peers, and keeps the @types its declarations name', () => {
    const packed = packedManifest(workspace, versions, engines);
    expect(packed.dependencies).toEqual({ '@rudder/contracts': '0.1.0', '@types/pg': '8.23.1', kafkajs: '2.2.4' });
    expect(packed.peerDependencies).toEqual({ '@nestjs/common': '^11.2.10', zod: '^4.6.7' });
    expect(packed).toMatchObject({ name: '@rudder/runtime', version: '0.1.0', private: true, type: 'module', engines });
    expect(packed).not.toHaveProperty('devDependencies');
  });

  it("keeps the package's own peers (an adapter's framework): the app installs the framework it has", () => {
    const adapter: Manifest = { ...workspace, name: '@rudder/ai-sdk', dependencies: { '@rudder/contracts': '*' }, peerDependencies: { ai: '^6.0.0' } };
    expect(packedManifest(adapter, versions, engines).peerDependencies).toEqual({ ai: '^6.0.0' });
  });

  it('refuses a dependency on a workspace package that is not packed', () => {
    expect(() => packedManifest({ ...workspace, dependencies: { '@rudder/dev-services': '*' } }, versions, engines)).toThrow(/@rudder\/dev-services, which is not packed/);
  });

  it('refuses an export it cannot build: one that is not a source file', () => {
    expect(() => packedManifest({ ...workspace, exports: { '.': './dist/index.js' } }, versions, engines)).toThrow(/\.\/src\/\*\.ts/);
  });
});

describe("a declaration file's relative imports", () => {
  const emitted = new Set(['./loop', './agents/index', '../contracts']);
  const exists = (path: string) => emitted.has(path);

  it('name the file Node loads: a module, or a directory index', () => {
    const text = [
      "export * from './loop';",
      "export { AgentTool } from './agents';",
      'import type { Input } from "../contracts";',
      "export declare const x: import('./loop').Loop;",
      "import { z } from 'zod';",
      "export * from './loop.js';",
    ].join('\n');
    expect(withExtensions(text, exists).split('\n')).toEqual([
      "export * from './loop.js';",
      "export { AgentTool } from './agents/index.js';",
      'import type { Input } from "../contracts.js";',
      "export declare const x: import('./loop.js').Loop;",
      "import { z } from 'zod';",
      "export * from './loop.js';",
    ]);
  });

  it('fail loudly when they name a file that was not emitted', () => {
    expect(() => withExtensions("export * from './gone';", exists)).toThrow(/\.\/gone/);
  });
});
