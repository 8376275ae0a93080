/** Small pieces the pages share. */
import type { ComponentChildren } from 'preact';
import { formatRelative, formatUtc } from './format.js';

/** A time shown relative ("3 hours ago"), with the exact UTC time in `datetime` and on hover. */
export function Time({ at, now, exact = false }: { at: string; now: number; exact?: boolean }) {
  return (
    <time datetime={at} title={formatUtc(at)}>
      {exact ? `${formatUtc(at)} (${formatRelative(at, now)})` : formatRelative(at, now)}
    </time>
  );
}

/** The hidden field carrying the session-bound form token (@fastify/csrf-protection reads `_csrf`). */
export function FormToken({ token }: { token: string }) {
  return <input type="hidden" name="_csrf" value={token} />;
}

export function FieldError({ id, message }: { id: string; message: string | null | undefined }) {
  if (message === null || message === undefined) return null;
  return (
    <p class="field-error" id={id}>
      {message}
    </p>
  );
}

export function Banner({ tone, children }: { tone: 'info' | 'warning' | 'danger'; children: ComponentChildren }) {
  return (
    <div class={`banner banner-${tone}`} role={tone === 'info' ? 'status' : 'alert'}>
      {children}
    </div>
  );
}
