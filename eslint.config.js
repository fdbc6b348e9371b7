// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * typescript-eslint's recommended rules that need no type information (fast: no program is
 * built; `npm run typecheck` does the type checking). Each exception says why.
 */
export default tseslint.config(
  // What git ignores: installed, built or made by a run (Stryker's sandboxes while it runs, its reports).
  { ignores: ['**/node_modules/', '**/dist/', '.stryker-tmp/', 'reports/', 'coverage/', '.rudder/'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    rules: {
      // `_` names what is unused on purpose (`for await (const _ of stream)`).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      // A `let` that closures read before its one assignment (a server handler and its stub) cannot be a `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Texts PostgreSQL cannot store (NUL, lone surrogates) are matched on purpose (contracts' storable-text).
      'no-control-regex': 'off',
    },
  },
  {
    // The decider is pure (libs/conversation/src/import-graph.unit.spec.ts checks what it loads,
    // transitively): the agent's index loads the model client and the tokenizer, its turn does not.
    files: ['libs/conversation/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@rudder/agent', message: "Import the turn from '@rudder/agent/turn': the package's index loads the model client and the tokenizer." }],
          patterns: [
            {
              group: ['openai', 'undici', 'gpt-tokenizer*', 'pg', 'kafkajs', 'typeorm', '@nestjs/*', 'node:http*', 'node:net', 'node:tls', 'node:fs*', 'node:child_process', '@rudder/runtime', '@rudder/event-store'],
              message: 'The decider does no I/O: it decides on what it is given.',
            },
          ],
        },
      ],
    },
  },
  {
    // raw-request.ts: the gateway's hostile-input specs' client, beside them.
    files: ['**/*.spec.ts', '**/testing/**/*.ts', 'apps/gateway/src/hostile-input/raw-request.ts', 'test/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      // Specs, their helpers and the dev scripts read HTTP bodies loosely; the assertions check the shape.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
