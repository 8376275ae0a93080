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
import { DatasetError } from '../load/dataset-error.js';

/**
 * Every command, by its path, and how to load it. A command's module brings in what it works with (the
 * stores, the server, the loaders: most of a second of loading on a small machine), so the command line
 * loads only the command it runs (half the time for `keys rename`); help on the whole program or a group,
 * and a name it does not know, load them all (commander's own help and suggestions).
 */
const COMMANDS: ReadonlyArray<{ path: readonly [string] | readonly [string, string]; load: () => Promise<Command> }> = [
  { path: ['serve'], load: async () => (await import('./commands/serve.js')).serveCommand() },
  { path: ['migrate'], load: async () => (await import('./commands/migrate.js')).migrateCommand() },
  { path: ['seed'], load: async () => (await import('./commands/seed.js')).seedCommand() },
  { path: ['load'], load: async () => (await import('./commands/load.js')).loadCommand() },
  { path: ['copy-store'], load: async () => (await import('./commands/copy-store.js')).copyStoreCommand() },
  { path: ['accounts', 'create'], load: async () => (await import('./commands/accounts/create.js')).accountsCreateCommand() },
  { path: ['accounts', 'set-plan'], load: async () => (await import('./commands/accounts/set-plan.js')).accountsSetPlanCommand() },
  { path: ['accounts', 'log'], load: async () => (await import('./commands/accounts/log.js')).accountsLogCommand() },
  { path: ['accounts', 'sign-in-link'], load: async () => (await import('./commands/accounts/sign-in-link.js')).accountsSignInLinkCommand() },
  { path: ['keys', 'create'], load: async () => (await import('./commands/keys/create.js')).keysCreateCommand() },
  { path: ['keys', 'list'], load: async () => (await import('./commands/keys/list.js')).keysListCommand() },
  { path: ['keys', 'roll'], load: async () => (await import('./commands/keys/roll.js')).keysRollCommand() },
  { path: ['keys', 'rename'], load: async () => (await import('./commands/keys/rename.js')).keysRenameCommand() },
  { path: ['keys', 'set-scopes'], load: async () => (await import('./commands/keys/set-scopes.js')).keysSetScopesCommand() },
  { path: ['keys', 'set-allowed-ips'], load: async () => (await import('./commands/keys/set-allowed-ips.js')).keysSetAllowedIpsCommand() },
  { path: ['keys', 'revoke'], load: async () => (await import('./commands/keys/revoke.js')).keysRevokeCommand() },
  { path: ['keys', 'revoke-leaked'], load: async () => (await import('./commands/keys/revoke-leaked.js')).keysRevokeLeakedCommand() },
  { path: ['keys', 'usage'], load: async () => (await import('./commands/keys/usage.js')).keysUsageCommand() },
  { path: ['notices'], load: async () => (await import('./commands/notices.js')).noticesCommand() },
  { path: ['meter', 'upgrade-keys'], load: async () => (await import('./commands/meter-upgrade-keys.js')).meterUpgradeKeysCommand() },
  { path: ['import', 'prices'], load: async () => (await import('./commands/import/prices.js')).importPricesCommand() },
  { path: ['openapi'], load: async () => (await import('./commands/openapi.js')).openapiCommand() },
];

/** The groups of subcommands, in the order help lists them among the commands. */
const GROUPS: Record<string, string> = {
  accounts: 'create accounts, change their plan, read their security log, make a sign-in link to their settings screen',
  keys: 'create, list, roll, rename, rescope, limit to addresses and revoke API keys, and see their usage',
  meter: "the Redis meter's keys",
  import: 'import data files',
};

/** The commands `argv` runs: the one it names, or every one when it names none, a whole group, or one not known. */
export function commandsFor(argv: readonly string[]): typeof COMMANDS {
  const words = argv.filter((arg) => !arg.startsWith('-'));
  const [first, second] = words;
  const exact = COMMANDS.filter(({ path }) => path[0] === first && (path.length === 1 || path[1] === second));
  return exact.length === 1 ? exact : COMMANDS;
}

async function program(argv: readonly string[]): Promise<Command> {
  const root = new Command('shelfapi')
    .description(
      'shelfapi: the read-only Developer API and its operator commands.\n' +
        'Configuration from the environment: DATABASE_URL, REDIS_URL or REDIS_CLUSTER_URLS, HOST, PORT, OPS_PORT, KEY_PREFIX, PLAN_LIMITS,\n' +
        'PUBLIC_URL, SETTINGS_HANDOVER_SECRET, SETTINGS_REAUTH_MINUTES.',
    )
    .showHelpAfterError(false);
  const wanted = commandsFor(argv);
  const loaded = await Promise.all(wanted.map(({ load }) => load()));
  const groups = new Map<string, Command>();
  wanted.forEach(({ path }, i) => {
    const command = loaded[i]!;
    if (command.name() !== path.at(-1)) throw new Error(`cli: the command loaded for "${path.join(' ')}" is named "${command.name()}"`);
    if (path.length === 1) return void root.addCommand(command);
    let group = groups.get(path[0]);
    if (group === undefined) {
      group = new Command(path[0]).description(GROUPS[path[0]] ?? '');
      groups.set(path[0], group);
      root.addCommand(group);
    }
    group.addCommand(command);
  });
  return root;
}

/** Every command and subcommand: exit instead of process.exit, and one-line errors. */
function configure(command: Command): void {
  command.exitOverride();
  command.configureOutput({ writeErr: (text) => process.stderr.write(text.startsWith('error: ') ? `shelfapi: ${text.slice(7)}` : text) });
  for (const sub of command.commands) configure(sub);
}

export async function main(argv: string[]): Promise<number> {
  const root = await program(argv);
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
