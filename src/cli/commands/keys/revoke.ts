import { Command } from 'commander';
import { OPERATOR } from '../../../services/actor.js';
import { revokeKey } from '../../../services/keys.service.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysRevokeCommand(): Command {
  return new Command('revoke')
    .description('revoke a key; refused from its very next request, on every server (a revoked key is refused again)')
    .argument('<keyId>', 'key id')
    .option('--json', 'print the key as JSON')
    .action(async (keyId: string, options: { json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      await withStore(async ({ config, store, now }) => {
        const key = await revokeKey(store, { keyId: id, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
        if (options.json) return printJson(key);
        print(`Key ${key.id} (…${key.lastFour}) revoked at ${key.revokedAt}.`);
      });
    });
}
