/**
 * The settings screen's own security rules (docs/contract.md, "Settings screen"): the headers of every page, and the
 * check that a state-changing request comes from this site. Form tokens are @fastify/csrf-protection's;
 * this module only decides what "this site" is.
 */
import type { FastifyRequest } from 'fastify';

/** No inline script or style, nothing from another host, never framed. */
export const SETTINGS_CSP_DIRECTIVES = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  objectSrc: ["'none'"],
} as const;

/** The origin owners reach: PUBLIC_URL when configured, else the scheme and Host of this request. */
export function siteOrigin(request: FastifyRequest, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl;
  return `${request.protocol}://${request.host}`;
}

export type SiteCheck = { ok: true } | { ok: false; reason: string };

/**
 * A POST must come from a page of this site: its Origin is this site's, or, when the browser sends no Origin
 * or the opaque `null` (Chromium sends `Origin: null` for a form posted from a page whose Referrer-Policy is
 * no-referrer, as ours are), its Sec-Fetch-Site is same-origin. A request showing neither is refused.
 */
export function checkSameSite(headers: FastifyRequest['headers'], origin: string): SiteCheck {
  const sentOrigin = headers.origin;
  if (typeof sentOrigin === 'string' && sentOrigin !== '' && sentOrigin !== 'null') {
    return sentOrigin === origin ? { ok: true } : { ok: false, reason: 'foreign_origin' };
  }
  const fetchSite = headers['sec-fetch-site'];
  if (typeof fetchSite === 'string' && fetchSite !== '') {
    return fetchSite === 'same-origin' ? { ok: true } : { ok: false, reason: 'cross_site_fetch' };
  }
  return { ok: false, reason: sentOrigin === 'null' ? 'opaque_origin' : 'no_origin' };
}
