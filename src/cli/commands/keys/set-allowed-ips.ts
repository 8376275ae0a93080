import { Command } from 'commander';
import { MAX_ALLOWED_ADDRESSES } from '../../../domain/address-list.js';
import { InputError } from '../../../errors/input-error.js';
import { OPERATOR } from '../../../services/actor.js';
import { setAllowedAddresses } from '../../../services/keys.service.js';
import { parseAllowedAddresses } from '../../../services/key-fields.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

/** The list as given (`any`: no limit), checked before the store is opened. */
function addressesOf(list: string): string[] {
  if (list.trim().toLowerCase() === 'any') return [];
  if (list.trim() === '') throw new InputError('Give comma-separated addresses or CIDR ranges, or "any" to allow every address.', 'addresses');
  return parseAllowedAddresses(list.split(','));
}

export function keysSetAllowedIpsCommand(): Command {
  return new Command('set-allowed-ips')
    .description(
      `limit a key to IPv4/IPv6 addresses or CIDR ranges (at most ${MAX_ALLOWED_ADDRESSES}), or "any"; from elsewhere the key answers 401; effective on its next request, on every server`,
    )
    .argument('<keyId>', 'key id')
    .argument('<list>', 'comma-separated addresses or ranges (203.0.113.7,10.0.0.0/8,2001:db8::/32), or any')
    .option('--json', 'print the key as JSON')
    .action(async (keyId: string, list: string, options: { json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      const addresses = addressesOf(list);
      await withStore(async ({ config, store, now }) => {
        const key = await setAllowedAddresses(store, { keyId: id, addresses, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
        if (options.json) return printJson(key);
        print(
          key.allowedAddresses.length === 0
            ? `Key ${key.id} (…${key.lastFour}) may be used from any address.`
            : `Key ${key.id} (…${key.lastFour}) may be used only from ${key.allowedAddresses.join(', ')}.`,
        );
      });
    });
}
