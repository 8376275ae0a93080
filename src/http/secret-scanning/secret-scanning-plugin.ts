/**
 * `POST /secret-scanning/github`: GitHub's secret scanning partner program reports keys it found public
 * (docs/operations.md, "Leaked keys"). An encapsulated plugin beside the API and the settings screen: its
 * route is `public` (no key, not metered, the API's pipeline steps aside) and hidden from the OpenAPI
 * document (not part of the Data API).
 *
 * A report, in order:
 *   onRequest   the endpoint's own limit (429), both signature headers present and well-formed (401): a
 *               flood is refused before its body is read
 *   body        read as raw bytes, 1 MB at most (413): the signature is over exactly these bytes
 *   handler     the signing key by identifier (read again once if unknown; 401 if still unknown, 503 if
 *               GitHub's keys cannot be had), the ECDSA P-256 / SHA-256 signature checked by node:crypto
 *               (401), the body parsed (400), then each token answered by the leaked-keys service
 * Nothing is looked up or revoked before the signature holds, and nothing is revoked for a body refused.
 * The answer is GitHub's feedback array, `[{ token_raw, token_type, label }]`; it holds the reported
 * tokens, as GitHub's format asks, so it is never cached and never logged.
 */
import { verify } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SECRET_SCANNING } from '../../services/actor.js';
import { reportLeakedKeys } from '../../services/leaked-keys.service.js';
import type { App, AppDeps } from '../app-types.js';
import { ApiError, errorBody } from '../errors.js';
import { isOutage, RETRY_AFTER_UNAVAILABLE_S } from '../store-unavailable.js';
import { GITHUB_PUBLIC_KEYS_URL, GitHubPublicKeys, PublicKeysUnavailableError } from './github-public-keys.js';
import { parseReport } from './report-body.js';
import { DEFAULT_REPORT_LIMITS, ReportLimit, type ReportLimitOptions } from './report-limit.js';

export const SECRET_SCANNING_PATH = '/secret-scanning/github';
/** 1 MB: GitHub's reports are far smaller (1,000 tokens are about 200 KB). */
export const MAX_REPORT_BYTES = 1024 * 1024;

const IDENTIFIER_HEADER = 'github-public-key-identifier';
const SIGNATURE_HEADER = 'github-public-key-signature';
/** GitHub's identifiers are hex digests; anything else is not one of theirs (and is never looked up). */
const IDENTIFIER = /^[0-9A-Za-z_.:-]{1,128}$/;
/** Base64 of a DER ECDSA P-256 signature: 70-72 bytes; some room either way. */
const SIGNATURE = /^[A-Za-z0-9+/]{20,200}={0,2}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether this request holds a turn of the endpoint's limit (given back when its answer is sent). */
    scanningTurn: boolean;
  }
}

const notSigned = (message: string) => new ApiError('unauthorized', message);

/** 413 is no code of the Data API's table (src/http/errors.ts, which the OpenAPI document lists): its own. */
class ReportTooLarge extends Error {
  readonly code = 'FST_ERR_CTP_BODY_TOO_LARGE';
}
const tooLarge = () => new ReportTooLarge('A report is at most 1 MB.');

/** One header's value: a header given twice is not a signature. */
function header(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
}

export async function registerSecretScanning(app: App, deps: AppDeps, limits: ReportLimitOptions = DEFAULT_REPORT_LIMITS): Promise<void> {
  const { config, store, clock } = deps;
  const publicKeys = new GitHubPublicKeys(
    config.secretScanningPublicKeys === null ? { url: GITHUB_PUBLIC_KEYS_URL } : { file: config.secretScanningPublicKeys },
  );
  const limit = new ReportLimit(limits);

  await app.register(async (scanning) => {
    scanning.addHook('onRoute', (route) => {
      route.config = { ...(route.config ?? {}), public: true };
      route.schema = { ...(route.schema ?? {}), hide: true };
    });
    scanning.decorateRequest('scanningTurn', false);

    // The raw bytes, whatever the content type says: the signature is over them, and JSON is parsed only
    // once it holds.
    scanning.removeAllContentTypeParsers();
    scanning.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_REPORT_BYTES }, (_request, body, done) => done(null, body));

    scanning.addHook('onRequest', async (request, reply) => {
      // As every answer of the API: the feedback holds the reported tokens.
      reply.header('cache-control', 'private, no-store');
      const retryAfter = limit.take(request.clientAddress, Date.now());
      if (retryAfter !== null) throw new ApiError('rate_limited', 'Too many reports from this address; retry after Retry-After seconds.', { 'retry-after': retryAfter });
      request.scanningTurn = true;
      // 'close' comes for an answer sent and for a client gone alike: the turn is always given back.
      reply.raw.once('close', () => {
        if (request.scanningTurn) limit.release();
        request.scanningTurn = false;
      });
      // Too large by its announced length: refused before anything else, signed or not (a body sent
      // without a length is cut at the limit while read, with the same answer).
      if (Number(request.headers['content-length'] ?? 0) > MAX_REPORT_BYTES) throw tooLarge();
      const identifier = header(request, IDENTIFIER_HEADER);
      const signature = header(request, SIGNATURE_HEADER);
      if (identifier === null || signature === null) throw notSigned('The report must carry Github-Public-Key-Identifier and Github-Public-Key-Signature.');
      if (!IDENTIFIER.test(identifier) || !SIGNATURE.test(signature)) throw notSigned('The report\'s signature headers are malformed.');
    });

    scanning.setErrorHandler(async (error: unknown, request, reply) => {
      let answer: { status: number; body: { error: string; message: string }; headers: Record<string, string | number> };
      const code = (error as { code?: unknown }).code;
      if (error instanceof ApiError) answer = { status: error.status, body: errorBody(error), headers: error.headers };
      else if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        answer = { status: 413, body: { error: 'payload_too_large', message: 'A report is at most 1 MB.' }, headers: { connection: 'close' } };
      } else if (typeof code === 'string' && code.startsWith('FST_ERR_CTP_')) {
        answer = { status: 400, body: { error: 'bad_request', message: 'The report\'s body could not be read.' }, headers: {} };
      } else if (error instanceof PublicKeysUnavailableError || isOutage(error)) {
        request.log.warn({ err: error }, 'secret scanning: a report could not be checked or answered now');
        const unavailable = new ApiError('service_unavailable', 'The report cannot be checked now; retry shortly.', { 'retry-after': RETRY_AFTER_UNAVAILABLE_S });
        answer = { status: unavailable.status, body: errorBody(unavailable), headers: unavailable.headers };
      } else {
        request.log.error({ err: error }, 'unexpected error');
        const fault = new ApiError('server_error', 'An unexpected error occurred.');
        answer = { status: fault.status, body: errorBody(fault), headers: {} };
      }
      request.failure = { code: answer.body.error, message: answer.body.message };
      return reply.code(answer.status).headers(answer.headers).type('application/json; charset=utf-8').send(answer.body);
    });

    scanning.post(SECRET_SCANNING_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      // Both checked in onRequest.
      const identifier = header(request, IDENTIFIER_HEADER)!;
      const signature = Buffer.from(header(request, SIGNATURE_HEADER)!, 'base64');
      const key = await publicKeys.keyFor(identifier);
      if (key === null) throw notSigned('The report is signed with a key GitHub does not publish.');
      let valid = false;
      try {
        valid = verify('sha256', body, { key, dsaEncoding: 'der' }, signature);
      } catch {
        // A signature that is not DER at all: as wrong as any other.
      }
      if (!valid) throw notSigned('The report\'s signature does not match its body.');
      const parsed = parseReport(body);
      if ('problem' in parsed) throw new ApiError('bad_request', parsed.problem);
      const answers = await reportLeakedKeys(store, parsed.tokens, { now: clock.now(), keyPrefix: config.keyPrefix, actor: SECRET_SCANNING });
      const revoked = answers.filter((a) => a.label === 'true_positive').length;
      request.log.info({ tokens: answers.length, truePositives: revoked }, 'secret scanning report answered');
      reply.type('application/json; charset=utf-8');
      return answers.map((answer, i) => ({ token_raw: parsed.tokens[i]!.token, token_type: parsed.tokens[i]!.type, label: answer.label }));
    });
  });
}
