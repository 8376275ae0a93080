import { Command } from 'commander';
import { OPERATOR } from '../../../services/actor.js';
import { rollKey } from '../../../services/keys.service.js';
import { NEVER_EXPIRES_WARNING, STOP_OLD_CHOICES } from '../../../services/key-expiry.js';
import { keyHint } from '../../../keys/api-key.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';
import { utcMinute } from '../../../services/time-text.js';

export function keysRollCommand(): Command {
  return new Command('roll')
    .description(
      'replace a key with a new one of the same name, scopes and expiry rule (printed once); the old key works until --stop-old, then answers 401',
    )
    .argument('<keyId>', 'key id')
    .option('--stop-old <when>', `when the old key stops: ${STOP_OLD_CHOICES.join(', ')}`, 'now')
    .option(
      '--expires-at <when>',
      "the new key's expiry, as keys create takes it: 7d, 30d, 90d, 1y, a date (the end of that day, UTC), an ISO 8601 date-time, or never (default: the old key's lifetime, counted from now)",
    )
    .option('--json', 'print { "id": N, "key": "<full new key>", "expiresAt": ISO or null, "old": { "id": N, "stopsAt": ISO } } as JSON')
    .action(async (keyId: string, options: { stopOld: string; expiresAt?: string; json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      await withStore(async ({ config, store, now }) => {
        const { old, created } = await rollKey(store, {
          keyId: id,
          stopOld: options.stopOld,
          // Not given: the service keeps the old key's lifetime; "never" reaches it as keys create passes it.
          ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
          now,
          keyPrefix: config.keyPrefix,
          actor: OPERATOR,
        });
        const stopsAt = old.revokedAt ?? old.retiresAt ?? new Date(now).toISOString();
        const expiresAt = created.record.expiresAt;
        if (expiresAt === null) process.stderr.write(`shelfapi: warning: the new key never expires. ${NEVER_EXPIRES_WARNING}\n`);
        if (options.json) return printJson({ id: created.id, key: created.key, expiresAt, old: { id: old.id, stopsAt } });
        const expires = expiresAt === null ? 'never expires' : `expires ${utcMinute(expiresAt)}`;
        print(`Rolled key ${old.id} (${keyHint(config.keyPrefix, old.lastFour)}, "${old.name}"). New key ${created.id} (${expires}), shown once, keep it:`);
        print(`  ${created.key}`);
        print(
          old.revokedAt !== null
            ? `The old key stopped working now.`
            : `The old key works until ${utcMinute(stopsAt)}, then answers 401.`,
        );
      });
    });
}
