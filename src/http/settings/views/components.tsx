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

/**
 * A wide table's box, scrolling sideways on a narrow screen while the page does not. It takes keyboard
 * focus (a named region), so that an owner without a mouse can scroll it with the arrow keys (axe-core:
 * scrollable-region-focusable).
 */
export function TableScroll({ label, card = false, children }: { label: string; card?: boolean; children: ComponentChildren }) {
  return (
    <div class={card ? 'card table-scroll' : 'table-scroll'} role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/**
 * A filter's label and select in a GET form (so it works without script, and its URL can be bookmarked):
 * the "all" choice (`allLabel`, sent as `allValue`) first, then each option; `selected` is the value
 * chosen, null for all.
 */
export function FilterSelect({
  id,
  name,
  label,
  allLabel,
  allValue = '',
  options,
  selected,
}: {
  id: string;
  name: string;
  label: string;
  allLabel: string;
  allValue?: string;
  options: ReadonlyArray<{ value: string; label: string }>;
  selected: string | null;
}) {
  return (
    <>
      <label for={id}>{label}</label>
      <select id={id} name={name}>
        <option value={allValue} selected={selected === null}>
          {allLabel}
        </option>
        {options.map((o) => (
          <option value={o.value} selected={selected === o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </>
  );
}

/** The buttons of a form that changes what a working key may do, and when the change takes effect. */
export function KeyChangeActions({ children }: { children: ComponentChildren }) {
  return (
    <div class="actions">
      {children}
      <span class="hint">Applies from the next request, on every server.</span>
    </div>
  );
}

/** Newer and older pages of a list, as plain links (`href` makes a page's address). */
export function Pager({ label, page, pages, href }: { label: string; page: number; pages: number; href: (page: number) => string }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label={label}>
      {page > 1 ? <a href={href(page - 1)}>← Newer</a> : <span />}
      <span class="muted">
        Page {page} of {pages}
      </span>
      {page < pages ? <a href={href(page + 1)}>Older →</a> : <span />}
    </nav>
  );
}
