/**
 * The line shown after an action (post/redirect/get): the redirect names one of these fixed notices in its
 * query string, never any text the owner typed, so nothing from the address bar reaches the page as text.
 */
const NOTICES = {
  renamed: 'The key was renamed.',
  scopes: 'The scopes were changed: they apply from the next request, on every server.',
  addresses: 'The allowed addresses were changed: they apply from the next request, on every server.',
  revoked: 'The key was revoked: it is refused from the next request, on every server.',
  reminder_hidden: 'The expiry reminder for that key is hidden until tomorrow, 00:00 UTC. The key itself did not change.',
  already_submitted: 'That form was already submitted; nothing more was created. The key made by the first submission is listed below.',
} as const;

export type NoticeName = keyof typeof NOTICES;

export function noticeFor(query: unknown): string | null {
  const name = (query as { done?: unknown } | null)?.done;
  return typeof name === 'string' && Object.hasOwn(NOTICES, name) ? NOTICES[name as NoticeName] : null;
}

export function withNotice(path: string, notice: NoticeName): string {
  return `${path}?done=${notice}`;
}
