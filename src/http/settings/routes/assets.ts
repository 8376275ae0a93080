/**
 * GET /settings/assets/settings.css and settings.js: our own small stylesheet and comfort script (copy to
 * clipboard), read once from this folder. Nothing is loaded from another host.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PageError } from '../page-errors.js';
import type { SettingsApp } from '../settings-context.js';

/** The files live in src/http/settings/assets; this module runs from src/ (tsx) or dist/ (built). */
const ASSETS_DIR = join(fileURLToPath(new URL('../../../..', import.meta.url)), 'src', 'http', 'settings', 'assets');

const ASSETS = {
  'settings.css': 'text/css; charset=utf-8',
  'settings.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;

let loaded: Map<string, { body: Buffer; type: string }> | null = null;

function assets(): Map<string, { body: Buffer; type: string }> {
  loaded ??= new Map(Object.entries(ASSETS).map(([name, type]) => [name, { body: readFileSync(join(ASSETS_DIR, name)), type }]));
  return loaded;
}

export function registerAssets(app: SettingsApp): void {
  app.get('/assets/:name', async (request, reply) => {
    const asset = assets().get((request.params as { name: string }).name);
    if (asset === undefined) throw new PageError('not_found');
    // Pages are never stored; these files may be, briefly (they change only with a deploy).
    return reply.header('cache-control', 'public, max-age=300').type(asset.type).send(asset.body);
  });
}
