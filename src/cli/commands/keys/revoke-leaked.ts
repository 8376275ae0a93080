/**
 * `shelfapi keys revoke-leaked KEY --source TEXT`: a key reported found public some other way than GitHub's
 * secret scanning (a mail, a support ticket), revoked through the same service as GitHub's reports: the
 * same security log line, the same key_leaked notice, the same answer for the same report twice.
 */
import { Command } from 'commander';
import { InputError } from '../../../errors/input-error.js';
import { isWellFormedKey, keyHint } from '../../../keys/api-key.js';
import { OPERATOR } from '../../../services/actor.js';
import { findKey } from '../../../services/key-lookup.js';
import { reportLeakedKey } from '../../../services/leaked-keys.service.js';
import { statusText } from '../../key-text.js';
import { print, printJson, withStore } from '../../context.js';

/** The key text: the argument, or standard input for `-` (so that it stays out of the shell's history). */
async function keyText(raw: string): Promise<string> {
  if (raw !== '-') return raw.trim();
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8').trim();
}

export function keysRevokeLeakedCommand(): Command {
  return new Command('revoke-leaked')
    .description(
      'revoke a key reported found public (a mail, a ticket): as a GitHub secret scanning report does it, with "revoked: found public" ' +
        'in the security log and a key_leaked notice; a key not working (unknown, revoked or expired) is left as it is and the command fails',
    )
    .argument('<key>', 'the key as reported (the whole key; "-" reads it from standard input)')
    .requiredOption('--source <text>', 'who reported it and how, for the security log: "mail from alice, 2026-11-29", "ticket 1234"')
    .option('--url <url>', 'where it was found, if known')
    .option('--json', 'print { label: "true_positive" | "false_positive", key: { id, accountId, name, hint } | null } as JSON')
    .action(async (raw: string, options: { source: string; url?: string; json?: boolean }) => {
      const token = await keyText(raw);
      if (options.source.trim() === '') throw new InputError('--source must say who reported the key');
      await withStore(async ({ config, store, now }) => {
        const answer = await reportLeakedKey(store, { token, url: options.url ?? null, source: options.source }, { now, keyPrefix: config.keyPrefix, actor: OPERATOR });
        const key = answer.keyId === null ? null : await findKey(store.db, answer.keyId, undefined);
        const shown = key === null ? null : { id: key.id, accountId: key.accountId, name: key.name, hint: keyHint(config.keyPrefix, key.lastFour) };
        if (options.json) printJson({ label: answer.label, key: shown });
        // Never the key itself: its hint only.
        if (answer.label === 'true_positive' && key !== null && shown !== null) {
          if (!options.json) print(`Key ${key.id} "${key.name}" (${shown.hint}) of account ${key.accountId} is revoked as found public; a key_leaked notice awaits \`shelfapi notices\`.`);
          return;
        }
        // Fails with one line on stderr, after the JSON when asked for (as a refused load does).
        if (key !== null) throw new InputError(`Key ${key.id} (${keyHint(config.keyPrefix, key.lastFour)}) is ${statusText(key, now)}: nothing changed.`);
        throw new InputError(
          isWellFormedKey(token, config.keyPrefix) ? 'No such key: nothing changed.' : `Not a ${config.keyPrefix}_live_ key (its form or checksum is wrong): nothing changed.`,
        );
      });
    });
}
