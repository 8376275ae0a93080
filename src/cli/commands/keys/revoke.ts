import { Command } from 'commander';
import { revoke } from '../../../admin/keys.service.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysRevokeCommand(): Command {
  return new Command('revoke')
    .description('revoke a key; refused from its very next request, on every server')
    .argument('<keyId>', 'key id')
    .option('--json', 'print the key as JSON')
    .action(async (keyId: string, options: { json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      await withStore(async ({ store, now }) => {
        const key = await revoke(store, id, now);
        if (options.json) return printJson(key);
        print(`Key ${key.id} (…${key.lastFour}) revoked at ${key.revokedAt}.`);
      });
    });
}
