/**
 * GitHub's secret scanning public keys (https://api.github.com/meta/public_keys/secret_scanning, or the file
 * SECRET_SCANNING_PUBLIC_KEYS names): the keys a report's signature is checked against, by their
 * identifier. Read when first needed, kept for a day, and read again for an identifier not known (GitHub
 * signs with a new key before a server's copy is a day old), at most once a minute from GitHub, so that
 * reports naming made-up identifiers cannot make this server hammer GitHub. A file is read again each time:
 * it is local and cheap, and an operator who adds a key to it sees it used at once.
 *
 * Fails closed: a document that cannot be read or has no usable key refuses reports (503, GitHub retries),
 * unless a copy read earlier is still held (it is used until a good one is read).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';

export const GITHUB_PUBLIC_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

/** How long a copy is trusted before it is read again, identifiers known or not. */
const KEEP_MS = 24 * 3_600_000;
/** From GitHub: at most one read for unknown identifiers this often. */
const GITHUB_REFETCH_MS = 60_000;
const FETCH_TIMEOUT_MS = 5_000;
/** The document is a few keys; anything much larger is not it. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** The keys could not be read, and no copy is held: reports are refused with a 503 until they can. */
export class PublicKeysUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`GitHub's secret scanning public keys could not be read: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'PublicKeysUnavailableError';
  }
}

/** The document's usable keys (EC P-256, which GitHub signs with) by identifier; throws if it has none. */
export function parsePublicKeys(text: string): Map<string, KeyObject> {
  const doc: unknown = JSON.parse(text);
  const list = typeof doc === 'object' && doc !== null && 'public_keys' in doc ? (doc as { public_keys: unknown }).public_keys : undefined;
  if (!Array.isArray(list)) throw new Error('expected { public_keys: [...] }');
  const keys = new Map<string, KeyObject>();
  for (const entry of list as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { key_identifier: id, key } = entry as { key_identifier?: unknown; key?: unknown };
    if (typeof id !== 'string' || id === '' || typeof key !== 'string') continue;
    try {
      const object = createPublicKey(key);
      // Only the curve GitHub documents: a key of another kind in the document is not trusted for anything.
      if (object.asymmetricKeyType === 'ec' && object.asymmetricKeyDetails?.namedCurve === 'prime256v1') keys.set(id, object);
    } catch {
      // An entry that is not a PEM public key is skipped; the others still serve.
    }
  }
  if (keys.size === 0) throw new Error('no usable ECDSA P-256 key in the document');
  return keys;
}

export type PublicKeySource = { file: string } | { url: string };

export class GitHubPublicKeys {
  private keys: Map<string, KeyObject> | null = null;
  private readAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly source: PublicKeySource,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The key of `identifier`, reading the document again once when it is not known; null when it is still
   * not there. Throws PublicKeysUnavailableError when no copy can be had.
   */
  async keyFor(identifier: string): Promise<KeyObject | null> {
    const minGap = 'file' in this.source ? 0 : GITHUB_REFETCH_MS;
    if (this.keys === null && this.now() - this.readAt < minGap) throw new PublicKeysUnavailableError('the last read failed; not tried again yet');
    if (this.keys === null || this.now() - this.readAt >= KEEP_MS) await this.refresh();
    const known = this.keys?.get(identifier);
    if (known !== undefined) return known;
    if (this.now() - this.readAt >= minGap) await this.refresh();
    return this.keys?.get(identifier) ?? null;
  }

  /** Reads the document once for every caller waiting meanwhile; keeps the old copy if the read fails. */
  private async refresh(): Promise<void> {
    this.reading ??= (async () => {
      try {
        this.keys = parsePublicKeys(await this.read());
      } catch (error) {
        if (this.keys === null) throw new PublicKeysUnavailableError(error);
      } finally {
        // A failed read waits its turn too: GitHub down must not mean a fetch per report.
        this.readAt = this.now();
        this.reading = null;
      }
    })();
    return this.reading;
  }

  private async read(): Promise<string> {
    if ('file' in this.source) return readFile(this.source.file, 'utf8');
    const response = await fetch(this.source.url, {
      headers: { accept: 'application/vnd.github+json', 'user-agent': 'shelfapi-secret-scanning' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`${this.source.url} answered ${response.status}`);
    const text = await response.text();
    if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${this.source.url} answered ${text.length} characters`);
    return text;
  }
}
