import { Command } from 'commander';
import { createAccount } from '../../../services/accounts.service.js';
import { print, printJson, withStore } from '../../context.js';

export function accountsCreateCommand(): Command {
  return new Command('create')
    .description('create an account')
    .requiredOption('--email <email>', 'email address (unique regardless of case)')
    .requiredOption('--plan <plan>', 'enthusiast, addon or none')
    .option('--plan-status <status>', 'active (default) or lapsed; not with --plan none')
    .option('--json', 'print { "id": N } as JSON')
    .action(async (options: { email: string; plan: string; planStatus?: string; json?: boolean }) => {
      await withStore(async ({ store, now }) => {
        const account = await createAccount(store, {
          email: options.email,
          plan: options.plan,
          now,
          ...(options.planStatus !== undefined ? { planStatus: options.planStatus } : {}),
        });
        if (options.json) return printJson({ id: account.id });
        print(`Created account ${account.id} (${account.email}, plan ${account.plan}${account.planStatus ? `, ${account.planStatus}` : ''}).`);
      });
    });
}
