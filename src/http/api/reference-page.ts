/**
 * The API reference page: Swagger UI (swagger-ui-dist, served from node_modules) rendering the committed
 * openapi.json, at /developer/docs on the API port. It sits outside /developer/v1 and its routes are public
 * (no key, no metering, no rate-limit headers) and hidden from the OpenAPI document, which describes only
 * the Developer API. Everything the page loads comes from this server: the CSP forbids any other host.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { App } from '../app-types.js';
import { ALLOW } from './api-methods.js';
import { notFound } from '../errors.js';

export const DOCS_PATH = '/developer/docs';
export const DOCUMENT_FILE = 'openapi.json';

const HTML_TYPE = 'text/html; charset=utf-8';
const JS_TYPE = 'text/javascript; charset=utf-8';
const CSS_TYPE = 'text/css; charset=utf-8';
const PNG_TYPE = 'image/png';
const JSON_TYPE = 'application/json; charset=utf-8';

/** The page and the document may change with any deploy; the assets are addressed by content hash. */
const NO_CACHE = 'no-cache';
const CACHEABLE = 'public, max-age=86400';

/**
 * Swagger UI sets inline style attributes (React) and shows data: images from its stylesheet; nothing else
 * needs loosening. connect-src stays 'self', so "Try it out" can only ever call this server.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The swagger-ui-dist files the page uses: nothing outside this list is ever read or served. */
const SWAGGER_UI_FILES = {
  'swagger-ui.css': CSS_TYPE,
  'index.css': CSS_TYPE,
  'swagger-ui-bundle.js': JS_TYPE,
  'favicon-32x32.png': PNG_TYPE,
  'favicon-16x16.png': PNG_TYPE,
} as const;

const PAGE_HEADERS = { 'content-security-policy': CONTENT_SECURITY_POLICY, 'referrer-policy': 'no-referrer' };

type SwaggerUiFile = keyof typeof SWAGGER_UI_FILES;

/**
 * Our own configuration of Swagger UI, a file of its own so that the CSP needs no inline script. The API
 * sends no CORS headers, so "Try it out" works only against the origin that served the page: that origin
 * is offered first among the servers (the document's own list stays, after it).
 */
const INIT_SCRIPT = `'use strict';
(function () {
  var root = document.getElementById('swagger-ui');
  var documentUrl = ${JSON.stringify(`${DOCS_PATH}/${DOCUMENT_FILE}`)};
  function fail(message) {
    root.textContent = 'The API reference could not be loaded: ' + message;
  }
  fetch(documentUrl, { credentials: 'omit', headers: { accept: 'application/json' } })
    .then(function (response) {
      if (!response.ok) throw new Error('GET ' + documentUrl + ' answered ' + response.status);
      return response.json();
    })
    .then(function (spec) {
      var origin = window.location.origin;
      var servers = Array.isArray(spec.servers) ? spec.servers : [];
      var listed = servers.some(function (server) { return server && server.url === origin; });
      if (!listed) spec.servers = [{ url: origin, description: 'This server' }].concat(servers);
      var ui = SwaggerUIBundle({
        spec: spec,
        dom_id: '#swagger-ui',
        layout: 'BaseLayout',
        presets: [SwaggerUIBundle.presets.apis],
        // The default sends the document to validator.swagger.io for a badge.
        validatorUrl: null,
        // Never read a configuration (or a document URL) from the page's query string.
        queryConfigEnabled: false,
        // A key typed into Authorize stays in this tab only, never in localStorage.
        persistAuthorization: false,
        withCredentials: false,
        deepLinking: true,
        displayRequestDuration: true,
        docExpansion: 'list',
        defaultModelsExpandDepth: 0,
        supportedSubmitMethods: ['get', 'head']
      });
      // A document given inline has no URL; showing where it lives lets a reader download it.
      ui.specActions.updateUrl(documentUrl);
      window.ui = ui;
    })
    .catch(function (error) { fail(error && error.message ? error.message : String(error)); });
})();
`;

interface Asset {
  body: Buffer;
  type: string;
  cacheControl: string;
}

const hashOf = (body: Buffer) => createHash('sha256').update(body).digest('hex').slice(0, 16);

/** The URL the page uses for an asset: its content hash in the query string makes a day of caching safe. */
const assetUrl = (name: string, asset: Asset) => `${DOCS_PATH}/${name}?h=${hashOf(asset.body)}`;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function pageHtml(assets: ReadonlyMap<string, Asset>): string {
  const url = (name: string) => {
    const asset = assets.get(name);
    if (asset === undefined) throw new Error(`reference page: no asset ${name}`);
    return escapeHtml(assetUrl(name, asset));
  };
  const documentUrl = escapeHtml(`${DOCS_PATH}/${DOCUMENT_FILE}`);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shelfapi Developer API reference</title>
<link rel="stylesheet" href="${url('swagger-ui.css')}">
<link rel="stylesheet" href="${url('index.css')}">
<link rel="icon" type="image/png" sizes="32x32" href="${url('favicon-32x32.png')}">
<link rel="icon" type="image/png" sizes="16x16" href="${url('favicon-16x16.png')}">
</head>
<body>
<noscript><p>This reference needs JavaScript. The OpenAPI document itself is at <a href="${documentUrl}">${documentUrl}</a>.</p></noscript>
<div id="swagger-ui"></div>
<script src="${url('swagger-ui-bundle.js')}"></script>
<script src="${url('init.js')}"></script>
</body>
</html>
`;
}

/** The committed document, three levels up from this module: src/http/api under tsx, dist/http/api once built. */
function readDocument(): Buffer | null {
  const path = fileURLToPath(new URL(`../../../${DOCUMENT_FILE}`, import.meta.url));
  try {
    return readFileSync(path);
  } catch (error) {
    // `shelfapi openapi` builds this app to write that very file: a missing file must not stop it.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function send(reply: FastifyReply, asset: Asset, extra: Record<string, string> = {}): FastifyReply {
  return reply
    .header('content-type', asset.type)
    .header('cache-control', asset.cacheControl)
    .header('x-content-type-options', 'nosniff')
    .headers(extra)
    .send(asset.body);
}

/** The page and its files, read once per process: tests build many apps, each would read 2 MB again. */
let staticFiles: { assets: ReadonlyMap<string, Asset>; page: Asset } | null = null;

function readStaticFiles(): { assets: ReadonlyMap<string, Asset>; page: Asset } {
  if (staticFiles !== null) return staticFiles;
  const swaggerUiDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(SWAGGER_UI_FILES) as Array<[SwaggerUiFile, string]>) {
    assets.set(name, { body: readFileSync(join(swaggerUiDir, name)), type, cacheControl: CACHEABLE });
  }
  assets.set('init.js', { body: Buffer.from(INIT_SCRIPT, 'utf8'), type: JS_TYPE, cacheControl: CACHEABLE });
  const page: Asset = { body: Buffer.from(pageHtml(assets), 'utf8'), type: HTML_TYPE, cacheControl: NO_CACHE };
  staticFiles = { assets, page };
  return staticFiles;
}

export async function registerReferencePage(app: App): Promise<void> {
  const { assets, page } = readStaticFiles();
  // Read at each registration, not kept with the files above: `npm run openapi` rewrites it, and a new
  // app serves what is in the repository now.
  const documentBody = readDocument();
  if (documentBody === null) app.log.warn(`reference page: ${DOCUMENT_FILE} is missing; ${DOCS_PATH}/${DOCUMENT_FILE} answers 404`);
  const documentAsset: Asset | null = documentBody === null ? null : { body: documentBody, type: JSON_TYPE, cacheControl: NO_CACHE };

  const config = { public: true } as const;
  const schema = { hide: true } as const;

  /** The page, or the file a path under it names; null when there is no such file. */
  const lookup = (name: string | null): { asset: Asset; headers?: Record<string, string> } | null => {
    // `/developer/docs/` is the page itself (its links are absolute, so they resolve the same).
    if (name === null || name === '') return { asset: page, headers: PAGE_HEADERS };
    const asset = name === DOCUMENT_FILE ? documentAsset : assets.get(name);
    return asset === undefined || asset === null ? null : { asset };
  };
  const refuse = (reply: FastifyReply): never => {
    reply.header('cache-control', 'no-store');
    throw notFound('No such file of the API reference page.');
  };
  const nameOf = (params: unknown) => (params as { '*'?: string })['*'] ?? '';

  // One wildcard rather than a route per file: any path under the page is public and answers from the
  // fixed map above or 404, so no request there ever reaches the key check or the file system.
  for (const [url, name] of [[DOCS_PATH, () => null], [`${DOCS_PATH}/*`, nameOf]] as const) {
    app.get(url, { config, schema }, async (request, reply) => {
      const found = lookup(name(request.params));
      return found === null ? refuse(reply) : send(reply, found.asset, found.headers);
    });
    // As on the Developer API, OPTIONS on an existing path answers 204 with Allow.
    app.options(url, { config, schema }, async (request, reply) => {
      if (lookup(name(request.params)) === null) return refuse(reply);
      return reply.code(204).header('allow', ALLOW).send();
    });
  }
}
