import { Command } from 'commander';
import { changePlan } from '../../../services/accounts.service.js';
import { OPERATOR } from '../../../services/actor.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function accountsSetPlanCommand(): Command {
  return new Command('set-plan')
    .description("change an account's plan; takes effect on its next request, the month's usage is kept; shown in the owner's security log")
    .argument('<id>', 'account id')
    .requiredOption('--plan <plan>', 'enthusiast, addon or none')
    .option('--plan-status <status>', 'active (default) or lapsed; not with --plan none')
    .option('--json', 'print the account as JSON')
    .action(async (id: string, options: { plan: string; planStatus?: string; json?: boolean }) => {
      const accountId = positiveInt('account id', id);
      await withStore(async ({ store, now }) => {
        const account = await changePlan(store, {
          accountId,
          actor: OPERATOR,
          now,
          plan: options.plan,
          ...(options.planStatus !== undefined ? { planStatus: options.planStatus } : {}),
        });
        if (options.json) return printJson({ id: account.id, plan: account.plan, planStatus: account.planStatus });
        print(`Account ${account.id}: plan ${account.plan}${account.planStatus ? `, ${account.planStatus}` : ''}.`);
      });
    });
}
