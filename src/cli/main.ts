/**
 * The operator command line `shelfapi`. Every command has --help; data commands take --json and then print
 * one JSON document on stdout and nothing else there. On failure: a one-line reason on stderr and a
 * non-zero exit status (1 for a refused action, 2 for a usage error). A file refused for its bad rows
 * (`load`, `import prices`) gets a line for each of them too, or with --json a document listing them.
 */
import { Command, CommanderError } from 'commander';
import { InputError, NotFoundError } from '../errors/input-error.js';
import { BadRowsError, badRowsSummary } from '../errors/bad-rows.js';
import { ConfigError } from '../config.js';
import { DatasetError } from '../load/load-dataset.js';
import { accountsCreateCommand } from './commands/accounts/create.js';
import { accountsLogCommand } from './commands/accounts/log.js';
import { accountsSetPlanCommand } from './commands/accounts/set-plan.js';
import { accountsSignInLinkCommand } from './commands/accounts/sign-in-link.js';
import { importPricesCommand } from './commands/import/prices.js';
import { copyStoreCommand } from './commands/copy-store.js';
import { keysCreateCommand } from './commands/keys/create.js';
import { keysListCommand } from './commands/keys/list.js';
import { keysRenameCommand } from './commands/keys/rename.js';
import { keysRevokeCommand } from './commands/keys/revoke.js';
import { keysRollCommand } from './commands/keys/roll.js';
import { keysSetAllowedIpsCommand } from './commands/keys/set-allowed-ips.js';
import { keysSetScopesCommand } from './commands/keys/set-scopes.js';
import { keysUsageCommand } from './commands/keys/usage.js';
import { loadCommand } from './commands/load.js';
import { meterUpgradeKeysCommand } from './commands/meter-upgrade-keys.js';
import { migrateCommand } from './commands/migrate.js';
import { noticesCommand } from './commands/notices.js';
import { openapiCommand } from './commands/openapi.js';
import { seedCommand } from './commands/seed.js';
import { serveCommand } from './commands/serve.js';

function program(): Command {
  const root = new Command('shelfapi')
    .description(
      'shelfapi: the read-only Developer API and its operator commands.\n' +
        'Configuration from the environment: DATABASE_URL, REDIS_URL or REDIS_CLUSTER_URLS, HOST, PORT, OPS_PORT, KEY_PREFIX, PLAN_LIMITS,\n' +
        'PUBLIC_URL, SETTINGS_HANDOVER_SECRET, SETTINGS_REAUTH_MINUTES.',
    )
    .showHelpAfterError(false);
  root.addCommand(serveCommand());
  root.addCommand(migrateCommand());
  root.addCommand(seedCommand());
  root.addCommand(loadCommand());
  root.addCommand(copyStoreCommand());
  root.addCommand(
    new Command('accounts')
      .description("create accounts, change their plan, read their security log, make a sign-in link to their settings screen")
      .addCommand(accountsCreateCommand())
      .addCommand(accountsSetPlanCommand())
      .addCommand(accountsLogCommand())
      .addCommand(accountsSignInLinkCommand()),
  );
  root.addCommand(
    new Command('keys')
      .description('create, list, roll, rename, rescope, limit to addresses and revoke API keys, and see their usage')
      .addCommand(keysCreateCommand())
      .addCommand(keysListCommand())
      .addCommand(keysRollCommand())
      .addCommand(keysRenameCommand())
      .addCommand(keysSetScopesCommand())
      .addCommand(keysSetAllowedIpsCommand())
      .addCommand(keysRevokeCommand())
      .addCommand(keysUsageCommand()),
  );
  root.addCommand(noticesCommand());
  root.addCommand(new Command('meter').description("the Redis meter's keys").addCommand(meterUpgradeKeysCommand()));
  root.addCommand(new Command('import').description('import data files').addCommand(importPricesCommand()));
  root.addCommand(openapiCommand());
  return root;
}

/** Every command and subcommand: exit instead of process.exit, and one-line errors. */
function configure(command: Command): void {
  command.exitOverride();
  command.configureOutput({ writeErr: (text) => process.stderr.write(text.startsWith('error: ') ? `shelfapi: ${text.slice(7)}` : text) });
  for (const sub of command.commands) configure(sub);
}

export async function main(argv: string[]): Promise<number> {
  const root = program();
  configure(root);
  try {
    await root.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not failures; commander has printed its own one-line reason otherwise.
      // 'commander.help' with a non-zero exitCode is a missing subcommand (`shelfapi keys`): commander
      // printed the usage on stderr, and it is a usage error, not a success, so it must not exit 0.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof BadRowsError) {
      // One line per bad row (each a `shelfapi: ` line, as any refusal), after one saying what happened.
      process.stderr.write(`shelfapi: ${badRowsSummary(error)}\n`);
      for (const line of error.message.split('\n')) process.stderr.write(`shelfapi: ${line}\n`);
      return 1;
    }
    if (error instanceof InputError || error instanceof NotFoundError || error instanceof DatasetError || error instanceof ConfigError) {
      process.stderr.write(`shelfapi: ${error.message}\n`);
      return 1;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`shelfapi: ${message.split('\n')[0]}\n`);
    return 1;
  }
}
