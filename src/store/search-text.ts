/**
 * Folding for `search`: names are stored folded and terms are folded the same way, in JavaScript, so that
 * SQLite and PostgreSQL match exactly the same rows ("pokemon" finds "Pokémon", case ignored).
 */
const COMBINING_MARKS = /\p{M}/gu;

export function foldText(text: string): string {
  return text.normalize('NFKD').replace(COMBINING_MARKS, '').toLowerCase();
}

/**
 * White space as the contract means it: Unicode's White_Space (space, tab, line breaks, NEL, no-break and
 * ideographic spaces...). Not JavaScript's `\s`, which also takes U+FEFF and leaves out NEL (U+0085). Search
 * values, and the names the in-memory index cuts into tokens, are split on this one definition, so that a
 * term never straddles two tokens and the index finds what the store's LIKE finds.
 */
export const WHITE_SPACE = /\p{White_Space}/u;
export const WHITE_SPACE_RUNS = /\p{White_Space}+/u;

/** Terms of a search value: split on white space, folded, empty ones dropped, duplicates removed. */
export function searchTerms(search: string): string[] {
  return [...new Set(search.split(WHITE_SPACE_RUNS).filter((t) => t !== '').map(foldText))].filter((t) => t !== '');
}

/** A LIKE pattern matching the term anywhere, with %, _ and \ taken literally (ESCAPE '\'). */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
