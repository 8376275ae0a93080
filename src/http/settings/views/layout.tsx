/**
 * The shell of every settings page: head (our stylesheet and comfort script, both from this server),
 * the navigation with the sign-out form when signed in, a notice after a completed action, the page.
 */
import type { ComponentChildren } from 'preact';
import { paths } from '../paths.js';
import { FormToken } from './components.js';

export type NavItem = 'overview' | 'create' | 'security-log' | null;

export interface SignedInShell {
  email: string;
  formToken: string;
  current: NavItem;
}

export interface LayoutProps {
  title: string;
  /** Null on pages for someone not signed in (an expired link, a signed-out session). */
  shell: SignedInShell | null;
  notice?: string | null;
  children: ComponentChildren;
}

const NAV: Array<{ item: Exclude<NavItem, null>; href: string; label: string }> = [
  { item: 'overview', href: paths.overview, label: 'Overview' },
  { item: 'create', href: paths.newKey, label: 'Create key' },
  { item: 'security-log', href: paths.securityLog, label: 'Security log' },
];

export function Layout({ title, shell, notice, children }: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${title} · Developer API settings`}</title>
        <link rel="stylesheet" href={paths.stylesheet} />
        <link rel="icon" type="image/svg+xml" href={paths.favicon} />
        <script src={paths.script} defer />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <div class="top-inner">
            <nav aria-label="Breadcrumb" class="brand">
              <a class="brand-section" href={paths.settings}>
                Settings
              </a>{' '}
              <span aria-hidden="true">›</span> <a href={paths.overview}>Developer API</a>
            </nav>
            {shell === null ? null : (
              <div class="account">
                <span class="account-email">{shell.email}</span>
                <form method="post" action={paths.signOut} class="inline">
                  <FormToken token={shell.formToken} />
                  <button type="submit" class="button-link">
                    Sign out
                  </button>
                </form>
              </div>
            )}
          </div>
          {shell === null ? null : (
            <nav aria-label="Developer API settings" class="tabs">
              {NAV.map((entry) => (
                <a href={entry.href} aria-current={shell.current === entry.item ? 'page' : undefined}>
                  {entry.label}
                </a>
              ))}
            </nav>
          )}
        </header>
        <main id="main">
          {notice ? (
            <p class="notice" role="status">
              {notice}
            </p>
          ) : null}
          {children}
        </main>
      </body>
    </html>
  );
}
