/**
 * Game titles: series entries ("Metroid: Echoes of Time"), made-up names ("The Crimson Voyage"), accented
 * ones, and a few with the characters that CSV quoting and LIKE escaping must get right.
 */
import { NAME_PARTS, SERIES, type Series } from './reference-data.js';
import { weighted, type Rng } from './random.js';
import type { RunPlatform } from './run-context.js';

const { adjectives: ADJECTIVES, nouns: NOUNS, subtitles: SUBTITLES, numerals: NUMERALS } = NAME_PARTS;
const SERIES_SUFFIXES = NAME_PARTS.seriesSuffixes;
const PREFIXES = weighted(NAME_PARTS.prefixes);

const ACCENT_TITLES: readonly ((r: Rng) => string)[] = [
  (r) => `Café ${r.pick(NOUNS)}`,
  (r) => `Señor ${r.pick(NOUNS)}: ${r.pick(SUBTITLES)}`,
  (r) => `Über ${r.pick(NOUNS)} ${r.pick(NUMERALS)}`,
  (r) => `${r.pick(ADJECTIVES)} Piñata ${r.pick(NOUNS)}`,
  (r) => `Déjà Vu: ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`,
  (r) => `Fútbol ${r.pick(['Mundial', 'Estrella', 'Fiesta'])} ${r.intBetween(94, 99)}`,
];

/** Titles exercising CSV quoting and LIKE escaping: , " % _ and backslash. */
const SPECIAL_TITLES: Readonly<Record<'percent' | 'underscore' | 'comma' | 'quote' | 'backslash' | 'mixed',
  (r: Rng) => string>> = {
  percent: (r) => r.pick([`100% ${r.pick(NOUNS)} Juice`, `${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}: 200% Turbo`,
    `99% ${r.pick(ADJECTIVES)}`]),
  underscore: (r) => r.pick([`${r.pick(NOUNS)}_${r.pick(NOUNS)}`, `SYSTEM_${r.pick(NOUNS).toUpperCase()}`,
    `Code_${r.pick(ADJECTIVES)}`]),
  comma: (r) => r.pick([`Hey You, ${r.pick(NOUNS)}!`, `Rock, Paper, ${r.pick(NOUNS)}`,
    `${r.pick(ADJECTIVES)}, ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`]),
  quote: (r) => r.pick([`The "${r.pick(ADJECTIVES)}" ${r.pick(NOUNS)}`, `${r.pick(NOUNS)} "${r.pick(NOUNS)}" Edition`,
    `"${r.pick(ADJECTIVES)}" ${r.pick(NOUNS)} ${r.pick(NUMERALS)}`]),
  backslash: (r) => `${r.pick(NOUNS)}\\${r.pick(NOUNS)}`,
  mixed: (r) => `"Hey, ${r.pick(NOUNS)}!" 100% ${r.pick(NOUNS)}_Edition`,
};
type SpecialKind = keyof typeof SPECIAL_TITLES;
const SPECIAL_KINDS = Object.keys(SPECIAL_TITLES) as SpecialKind[];

const POKEMON: Series = (() => {
  const series = SERIES.find((s) => s.name === 'Pokémon');
  if (series === undefined) throw new Error('src/demo/reference/series.json: pinned Pokémon items need the Pokémon series');
  return series;
})();

export type Pin = 'classic' | 'pokemon' | 'accent' | SpecialKind;

/**
 * A handful of ids in every hundred get fixed traits, so that even a 50-item catalogue contains an
 * accented name and every awkward character, all published and priced.
 */
export function pinOf(id: number): Pin | null {
  switch (id % 100) {
    case 1: return 'classic';
    case 3: return 'pokemon';
    case 5: return 'accent';
    case 7: return 'percent';
    case 11: return 'underscore';
    case 13: return 'comma';
    case 17: return 'quote';
    case 19: return 'backslash';
    case 23: return 'mixed';
    default: return null;
  }
}

/** A game's title, and the series it belongs to (which then sets its publisher and genre). */
export function gameTitle(r: Rng, pin: Pin | null, p: RunPlatform, year: number): { name: string; series: Series | null } {
  if (pin === 'pokemon') {
    return {
      name: r.pick([`Pokémon ${r.pick(ADJECTIVES)} ${r.pick(SERIES_SUFFIXES)}`, `Pokémon ${r.pick(SUBTITLES)}`,
        `Pokémon Mystery Dungeon: ${r.pick(SUBTITLES)}`]),
      series: POKEMON,
    };
  }
  if (pin === 'accent') return { name: r.pick(ACCENT_TITLES)(r), series: null };
  if (pin !== null && pin !== 'classic') return { name: SPECIAL_TITLES[pin](r), series: null };
  const roll = r.next();
  if (roll < 0.015) return { name: SPECIAL_TITLES[r.pick(SPECIAL_KINDS)](r), series: null };
  if (roll < 0.04) return { name: r.pick(ACCENT_TITLES)(r), series: null };
  if (roll < 0.5) {
    const eligible = p.series;
    let f: Series | null = null;
    for (let tries = 0; tries < 3 && eligible.length > 0; tries++) {
      const cand = r.pick(eligible);
      if (cand.since <= year) {
        f = cand;
        break;
      }
    }
    if (f !== null) return { name: seriesTitle(r, f.name, p), series: f };
  }
  const t = r.int(6);
  const adj = r.pick(ADJECTIVES);
  const noun = r.pick(NOUNS);
  let name: string;
  if (t === 0) name = `${adj} ${noun}`;
  else if (t === 1) name = `${adj} ${noun} ${r.pick(NUMERALS)}`;
  else if (t === 2) name = `${r.pick(NOUNS)} of the ${adj} ${noun}`;
  else if (t === 3) name = `The ${adj} ${noun}`;
  else if (t === 4) name = `${adj} ${noun}: ${r.pick(SUBTITLES)}`;
  else name = `${PREFIXES.pick(r)} ${adj} ${noun}`;
  return { name, series: null };
}

function seriesTitle(r: Rng, fn: string, p: RunPlatform): string {
  const t = r.int(7);
  if (t === 0) return `${fn} ${r.pick(NUMERALS)}`;
  if (t === 1) return `${PREFIXES.pick(r)} ${fn}${r.chance(0.5) ? ` ${r.pick(NUMERALS)}` : ''}`;
  if (t === 2) return `${fn}: ${r.pick(SUBTITLES)}`;
  if (t === 3) return `${fn} ${r.pick(SERIES_SUFFIXES)}`;
  if (t === 4) return `${fn} ${r.pick(ADJECTIVES)} ${r.pick(SERIES_SUFFIXES)}`;
  if (t === 5 && p.def.titleSuffix !== undefined) return `${fn} ${p.def.titleSuffix}`;
  return `${fn} ${r.pick(NUMERALS)}: ${r.pick(SUBTITLES)}`;
}
