/**
 * The one-time slot that shows a new key once (post/redirect/get): the key waits in the store for at most a
 * few minutes, sealed with AES-256-GCM under a key derived from the session's cookie value, which only the
 * owner's browser holds. The store alone can never show it; the page that shows it deletes it.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

const sealingKey = (sessionToken: string) => createHmac('sha256', sessionToken).update('shelfapi settings: new key shown once').digest();

export function sealNewKey(sessionToken: string, key: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(sessionToken), iv);
  const body = Buffer.concat([cipher.update(key, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The key, or null when the sealed text was not made for this session. */
export function openNewKey(sessionToken: string, sealed: string): string | null {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(sessionToken), raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
