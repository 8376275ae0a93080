import { Command } from 'commander';
import { InputError } from '../../../errors/input-error.js';
import { HANDOVER_MAX_MINUTES, handoverSecret, mintHandoverToken, signInUrl } from '../../../services/settings-auth/handover-token.js';
import { getAccount } from '../../../store/repositories/account.repository.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function accountsSignInLinkCommand(): Command {
  return new Command('sign-in-link')
    .description(
      "print a single-use link that signs the account's owner in to Settings → Developer API (the same token the platform mints; " +
        `valid ${HANDOVER_MAX_MINUTES} minutes at most)`,
    )
    .argument('<id>', 'account id')
    .option('--minutes <n>', `minutes the link stays valid, 1 to ${HANDOVER_MAX_MINUTES}`, String(HANDOVER_MAX_MINUTES))
    .option('--json', 'print { accountId, url, expiresAt } as JSON')
    .action(async (id: string, options: { minutes: string; json?: boolean }) => {
      const accountId = positiveInt('account id', id);
      const minutes = positiveInt('--minutes', options.minutes);
      if (minutes > HANDOVER_MAX_MINUTES) throw new InputError(`--minutes must be at most ${HANDOVER_MAX_MINUTES}`);
      await withStore(async ({ config, store, now }) => {
        if (!(await getAccount(store.db, accountId))) throw new InputError(`account ${accountId} does not exist`);
        const { token, expiresAt } = await mintHandoverToken({ secret: await handoverSecret(store, config, now), accountId, now, minutes });
        const url = signInUrl(config, token);
        if (options.json) return printJson({ accountId, url, expiresAt: new Date(expiresAt).toISOString() });
        print(url);
      });
    });
}
