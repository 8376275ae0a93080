/** How the command line shows a key's status and times: the status itself comes from keyStatus, as on the settings screen. */
import { utcMinute } from '../services/time-text.js';
import { keyStatus } from '../keys/key-status.js';
import type { KeyRecord } from '../store/repositories/api-key.repository.js';

/** Why a key works or not, with the date that matters: an operator asks "since when?" or "until when?" next. */
export function statusText(key: KeyRecord, now: number): string {
  const { status, at } = keyStatus(key, now);
  switch (status) {
    case 'active':
      return 'active';
    case 'expires_soon':
      return `expires soon`;
    case 'retiring':
      return `retiring, stops ${utcMinute(at ?? '')}`;
    case 'expired':
      return `expired ${(at ?? '').slice(0, 10)}`;
    case 'revoked':
      return `revoked ${(at ?? '').slice(0, 10)}`;
  }
}
