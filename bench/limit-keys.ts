/**
 * Gives every key of the named accounts the same allowed addresses, through the keys service the CLI and
 * the settings screen use (one transaction and one security log entry per key): the bench's "keys with
 * allowed addresses" scenario. Run by bench/run-data.ts once per store, before any server starts; the store is
 * the one DATABASE_URL names.
 *
 *   DATABASE_URL=... node --import tsx bench/limit-keys.ts ACCOUNT_IDS_JSON "ADDRESS ADDRESS ..."
 */
import { readFileSync } from 'node:fs';
import { withStore } from '../src/cli/context.js';
import { OPERATOR } from '../src/services/actor.js';
import { setAllowedAddresses } from '../src/services/keys.service.js';
import { listKeys } from '../src/store/repositories/api-key.repository.js';

const [idsFile, addresses] = process.argv.slice(2);
if (idsFile === undefined || addresses === undefined) {
  process.stderr.write('usage: limit-keys.ts ACCOUNT_IDS_JSON "ADDRESS ADDRESS ..."\n');
  process.exit(2);
}
const accountIds = JSON.parse(readFileSync(idsFile, 'utf8')) as number[];

const limited = await withStore(async ({ config, store, now }) => {
  let n = 0;
  for (const accountId of accountIds) {
    for (const key of await listKeys(store.db, accountId)) {
      await setAllowedAddresses(store, { keyId: key.id, accountId, addresses, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
      n++;
    }
  }
  return n;
});
process.stdout.write(`${JSON.stringify({ limited })}\n`);
