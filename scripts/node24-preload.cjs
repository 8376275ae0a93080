// Loaded by every process of npm test's Node 24 lane (NODE_OPTIONS=--require, which children inherit; set up by
// scripts/node24.ts). node_modules keeps the machine's build of better-sqlite3, for Node 20, because the
// PostgreSQL lane runs beside this one and loads it too; a process on Node 24 loads the build that
// scripts/node24.ts compiled for Node 24 (SHELFAPI_NODE24_ADDON) in its place. Any other Node, and any other
// addon, loads what it asked for, so a Node 20 child that inherits NODE_OPTIONS is not affected.
'use strict';
const Module = require('node:module');
const path = require('node:path');

const addon = process.env.SHELFAPI_NODE24_ADDON;
if (addon && process.versions.node.split('.')[0] === '24') {
  const load = Module._extensions['.node'];
  Module._extensions['.node'] = function loadNode24Build(module, filename) {
    const swapped = path.basename(filename) === 'better_sqlite3.node' && filename.includes(`${path.sep}better-sqlite3${path.sep}`);
    return load.call(this, module, swapped ? addon : filename);
  };
}
