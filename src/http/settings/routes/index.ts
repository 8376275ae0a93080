/** Every page and action of the settings screen, one file each; a reader can grep every path here. */
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { registerAssets } from './assets.js';
import { registerCreateKey } from './create-key.js';
import { registerCreatedKey } from './created-key.js';
import { registerHideExpiryReminder } from './hide-expiry-reminder.js';
import { registerKeyDetails } from './key-details.js';
import { registerNewKeyForm } from './new-key-form.js';
import { registerNotFound } from './not-found.js';
import { registerOverview } from './overview.js';
import { registerRenameKey } from './rename-key.js';
import { registerReplaceLeakedKey } from './replace-leaked-key.js';
import { registerRevokeKey } from './revoke-key.js';
import { registerRevokeKeyForm } from './revoke-key-form.js';
import { registerRollKey } from './roll-key.js';
import { registerRollKeyForm } from './roll-key-form.js';
import { registerSecurityLog } from './security-log.js';
import { registerSetKeyAddresses } from './set-key-addresses.js';
import { registerSetKeyScopes } from './set-key-scopes.js';
import { registerSignIn } from './sign-in.js';
import { registerSignOut } from './sign-out.js';
import { registerUsageCsv } from './usage-csv.js';

export async function registerSettingsRoutes(app: SettingsApp, context: SettingsContext): Promise<void> {
  registerSignIn(app, context); //         GET  /settings/sign-in?token=
  registerSignOut(app, context); //        POST /settings/sign-out
  registerOverview(app, context); //       GET  /settings/developer-api
  registerNewKeyForm(app, context); //     GET  /settings/developer-api/keys/new
  registerCreateKey(app, context); //      POST /settings/developer-api/keys
  registerCreatedKey(app, context); //     GET  /settings/developer-api/keys/created   (the new key, once)
  registerKeyDetails(app, context); //     GET  /settings/developer-api/keys/:id
  registerRenameKey(app, context); //      POST /settings/developer-api/keys/:id/name
  registerSetKeyScopes(app, context); //   POST /settings/developer-api/keys/:id/scopes
  registerSetKeyAddresses(app, context); // POST /settings/developer-api/keys/:id/addresses
  registerRollKeyForm(app, context); //    GET  /settings/developer-api/keys/:id/roll
  registerRollKey(app, context); //        POST /settings/developer-api/keys/:id/roll
  registerRevokeKeyForm(app, context); //  GET  /settings/developer-api/keys/:id/revoke
  registerRevokeKey(app, context); //      POST /settings/developer-api/keys/:id/revoke
  registerReplaceLeakedKey(app, context); // POST /settings/developer-api/keys/:id/replace-leaked
  registerHideExpiryReminder(app, context); // POST /settings/developer-api/keys/:id/hide-expiry-reminder
  registerUsageCsv(app, context); //       GET  /settings/developer-api/usage.csv, …/keys/:id/usage.csv
  registerSecurityLog(app, context); //    GET  /settings/developer-api/security-log
  registerAssets(app); //                  GET  /settings/assets/:name
  registerNotFound(app); //                GET  /settings (redirect); anything else: 404
}
