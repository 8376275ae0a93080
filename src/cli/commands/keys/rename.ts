import { Command } from 'commander';
import { OPERATOR } from '../../../services/actor.js';
import { renameKey } from '../../../services/keys.service.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysRenameCommand(): Command {
  return new Command('rename')
    .description("rename a key: 1 to 64 characters after trimming, unique among the account's live keys")
    .argument('<keyId>', 'key id')
    .argument('<name>', 'the new name')
    .option('--json', 'print the key as JSON')
    .action(async (keyId: string, name: string, options: { json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      await withStore(async ({ config, store, now }) => {
        const key = await renameKey(store, { keyId: id, name, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
        if (options.json) return printJson(key);
        print(`Key ${key.id} (…${key.lastFour}) is now named "${key.name}".`);
      });
    });
}
