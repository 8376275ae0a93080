/**
 * Regions and the product codes printed on a game's box ("SNS-ABCE-USA"), filled in from each platform's
 * template: @ a letter, # a digit, {R} USA/EUR/JPN, {r} E/P/J, {S} US/ES/PS.
 */
import { Weighted, type Rng } from './random.js';

/** The catalogue's region values; an item draws an index into this list. */
export const REGIONS = ['NTSC-U', 'PAL', 'NTSC-J'] as const;
export const REGION_PICK = new Weighted<number>([0, 1, 2], [60, 25, 15]);
/** REGIONS index of a Japanese release. */
export const JAPAN = 2;
const REGION_CODE = ['USA', 'EUR', 'JPN'];
const REGION_LETTER = ['E', 'P', 'J'];
const SONY_REGION = ['US', 'ES', 'PS'];

const CODE_LETTER = 0;
const CODE_DIGIT = 1;
const CODE_REGION = 2;
const CODE_REGION_LETTER = 3;
const CODE_SONY = 4;

/** A template as literal text and placeholders, parsed once per run rather than once per item. */
export type ProductCode = (string | number)[];

export function compileCode(tpl: string | null): ProductCode | null {
  if (tpl === null) return null;
  const parts: ProductCode = [];
  for (let i = 0; i < tpl.length; i++) {
    const ch = tpl[i] as string;
    if (ch === '@') parts.push(CODE_LETTER);
    else if (ch === '#') parts.push(CODE_DIGIT);
    else if (ch === '{') {
      const end = tpl.indexOf('}', i);
      const tok = tpl.slice(i + 1, end);
      parts.push(tok === 'R' ? CODE_REGION : tok === 'r' ? CODE_REGION_LETTER : CODE_SONY);
      i = end;
    } else parts.push(ch);
  }
  return parts;
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export function fillCode(parts: readonly (string | number)[], r: Rng, region: number): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'string') out += p;
    else if (p === CODE_LETTER) out += LETTERS[r.int(26)];
    else if (p === CODE_DIGIT) out += String(r.int(10));
    else if (p === CODE_REGION) out += REGION_CODE[region];
    else if (p === CODE_REGION_LETTER) out += REGION_LETTER[region];
    else out += SONY_REGION[region];
  }
  return out;
}
