/**
 * Folding for `search`: names are stored folded and terms are folded the same way, in JavaScript, so that
 * SQLite and PostgreSQL match exactly the same rows ("pokemon" finds "Pokémon", case ignored).
 */
const COMBINING_MARKS = /\p{M}/gu;

export function foldText(text: string): string {
  return text.normalize('NFKD').replace(COMBINING_MARKS, '').toLowerCase();
}

/** Terms of a search value: split on white space, folded, empty ones dropped, duplicates removed. */
export function searchTerms(search: string): string[] {
  return [...new Set(search.split(/\s+/u).filter((t) => t !== '').map(foldText))].filter((t) => t !== '');
}

/** A LIKE pattern matching the term anywhere, with %, _ and \ taken literally (ESCAPE '\'). */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
