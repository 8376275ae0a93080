/**
 * Any other path under /settings: the 404 page for a signed-in owner, the signed-out page otherwise (and
 * never the API's key check, which would answer with its JSON 401).
 */
import { PageError } from '../page-errors.js';
import { paths } from '../paths.js';
import { requireSession, type SettingsApp } from '../settings-context.js';

export function registerNotFound(app: SettingsApp): void {
  app.get('/', async (_request, reply) => reply.redirect(paths.overview, 303));
  app.route({
    method: ['GET', 'POST'],
    url: '/*',
    handler: async (request) => {
      requireSession(request);
      throw new PageError('not_found');
    },
  });
}
