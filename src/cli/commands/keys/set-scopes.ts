import { Command } from 'commander';
import { OPERATOR } from '../../../services/actor.js';
import { setKeyScopes } from '../../../services/keys.service.js';
import { parseScopes } from '../../../services/key-fields.js';
import { SCOPES } from '../../../domain/scopes.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysSetScopesCommand(): Command {
  return new Command('set-scopes')
    .description(`replace a key's scopes (at least one of ${SCOPES.join(', ')}); effective on its next request, on every server`)
    .argument('<keyId>', 'key id')
    .argument('<scopes>', 'comma-separated scopes')
    .option('--json', 'print the key as JSON')
    .action(async (keyId: string, scopes: string, options: { json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      const parsed = parseScopes(scopes);
      await withStore(async ({ config, store, now }) => {
        const key = await setKeyScopes(store, { keyId: id, scopes: parsed, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
        if (options.json) return printJson(key);
        print(`Key ${key.id} (…${key.lastFour}) now has the scopes ${key.scopes.join(', ')}.`);
      });
    });
}
