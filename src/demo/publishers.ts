/** Who may publish or develop a game: by era, by platform family, under the name in use that year. */
import { PUBLISHERS, type Era, type Family } from './reference-data.js';

export const ERAS: readonly Era[] = PUBLISHERS.eras;

/** Index in ERAS of the era a year falls in. */
export function eraOf(year: number): number {
  for (let i = 0; i < ERAS.length; i++) if (year <= (ERAS[i] as Era).until) return i;
  return ERAS.length - 1;
}

/** Sega went multi-platform in 2001: from this era on its studios appear on every family. */
const SEGA_MULTIPLATFORM_ERA = 4;

/** Keeps one-family publishers and studios on their family, which avoids "Naughty Dog" on a Switch game. */
export function allowedOn(name: string, family: Family, era: number): boolean {
  const owner = PUBLISHERS.studioFamilies[name];
  return owner === undefined || owner === family || (owner === 'sega' && era >= SEGA_MULTIPLATFORM_ERA);
}

const RENAMES = new Map(PUBLISHERS.renames.flatMap((group) => group.names.map((name) => [name, group.eras] as const)));

/** Publishers renamed over time; applied so a 2010 game is not "Square" nor a 1998 one "Square Enix". */
export function publisherInYear(name: string, year: number): string {
  const eras = RENAMES.get(name);
  if (eras === undefined) return name;
  return eras.find((e) => e.before === undefined || year < e.before)?.name ?? name;
}

/** The family's own publisher, or null where the family has none. */
export function firstPartyOf(family: Family): string | null {
  return PUBLISHERS.firstParty[family];
}
