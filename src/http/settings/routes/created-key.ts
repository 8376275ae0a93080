/**
 * GET /settings/developer-api/keys/created: shows the key waiting in the session's one-time slot and empties
 * it. Reloading, going back or opening it again shows that it is no longer shown; never the key.
 */
import { ownedKey } from '../../../services/key-lookup.js';
import { listKeys } from '../../../store/repositories/api-key.repository.js';
import { keyHint } from '../../../keys/api-key.js';
import { takeNewKey } from '../one-time.js';
import { keyView } from '../overview-data.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { siteOrigin } from '../site.js';
import { KeyGonePage, NewKeyPage } from '../views/new-key.js';

export function registerCreatedKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.get('/developer-api/keys/created', async (request, reply) => {
    const session = requireSession(request);
    const now = clock.now();
    const shell = await shellFor(context, request, reply, null);
    const waiting = await takeNewKey(store, request, session, now);
    if (waiting === null) return sendPage(reply, 200, KeyGonePage({ shell }));
    const record = await ownedKey(store, session.accountId, waiting.keyId);
    const replaced = (await listKeys(store.db, session.accountId)).find((k) => k.replacedBy === record.id);
    return sendPage(
      reply,
      200,
      NewKeyPage({
        shell,
        data: {
          now,
          key: waiting.key,
          record: keyView(record, config.keyPrefix, now),
          meUrl: `${siteOrigin(request, config.publicUrl)}/developer/v1/me`,
          replaces:
            replaced === undefined
              ? null
              : { id: replaced.id, name: replaced.name, hint: keyHint(config.keyPrefix, replaced.lastFour), stopsAt: replaced.retiresAt ?? replaced.revokedAt },
        },
      }),
    );
  });
}
