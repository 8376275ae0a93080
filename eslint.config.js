// Lint: typescript-eslint's recommended rules with type information, over src, test, bench, the client and examples.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, top to bottom: a top folder (or top-level module) imports only from lines below its
 * own, never from its own line or above, so every arrow between them runs one way. Cycles inside a folder
 * are caught by madge in `npm run lint`.
 */
const LAYERS = [
  ['cli'],
  ['workers'],
  ['server'],
  ['http'],
  ['copy-store'],
  ['auth', 'services', 'load', 'export'],
  ['usage-stats'],
  ['metering', 'observability'],
  ['store'],
  ['demo', 'keys', 'csv'],
  ['config'],
  ['domain', 'errors', 'clock', 'deadline'],
];
const MODULES = new Set(['server', 'config', 'clock', 'deadline']);
// Folders of one layer that may import each other (madge still refuses any cycle between their modules):
// the loader keeps the account and key rules by calling the services, and the demo seed and the price
// import write through the loader.
const PEERS = [['services', 'load']];
const peersOf = (name) => PEERS.filter((group) => group.includes(name)).flat();
// The deepest file: this many `../` climb from it to src/.
const MAX_DEPTH = 5;

/** One config block per folder and depth: a relative import climbing exactly to src/ names a top folder. */
function layerBlocks() {
  const blocks = [];
  LAYERS.forEach((line, rank) => {
    for (const name of line) {
      const above = LAYERS.slice(0, rank + 1).flat().filter((other) => other !== name && !peersOf(name).includes(other));
      if (above.length === 0) continue;
      const message = `src/${name} may import only from layers below it (see LAYERS in eslint.config.js).`;
      // `up` is how many `../` climb from the file to src/ (0: the file sits in src/ itself).
      const rule = (up) => {
        const climb = up === 0 ? '\\./' : `(?:\\.\\./){${up}}`;
        return ['error', { patterns: [{ regex: `^${climb}(?:${above.join('|')})(?:/|\\.js$)`, message }] }];
      };
      if (MODULES.has(name)) {
        blocks.push({ files: [`src/${name}.ts`], rules: { 'no-restricted-imports': rule(0) } });
        continue;
      }
      for (let up = 1; up <= MAX_DEPTH; up += 1) {
        blocks.push({ files: [`src/${name}/${'*/'.repeat(up - 1)}*.{ts,tsx}`], rules: { 'no-restricted-imports': rule(up) } });
      }
    }
  });
  return blocks;
}

export default tseslint.config(
  // native-objects-gc.child.cjs: plain JavaScript run by node itself (no tsx), outside the TypeScript project.
  {
    ignores: [
      'dist/', 'node_modules/', 'scratch/', 'clients/*/dist/', 'clients/python/.venv/', 'coverage/',
      'test/store/native-objects-gc.child.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  ...layerBlocks(),
  // node:test's test() and describe() return promises that the runner itself awaits.
  { files: ['test/**/*.ts', 'clients/*/test/**/*.ts', 'examples/test/**/*.ts'], rules: { '@typescript-eslint/no-floating-promises': 'off' } },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);
