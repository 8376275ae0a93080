/**
 * The index's answers stay exact while it keeps the unions of expensive terms (search-index.ts): the same
 * total and page as a plain scan of the names, on first use, when kept, after the least recently used
 * were let go, for one term alone (answered from a precomputed set without a copy) and combined.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IndexQuery, SearchIndex } from '../../src/store/search/search-index.js';
import { SearchIndexBuilder } from '../../src/store/search/search-index-builder.js';
import { seededRandom } from '../../src/demo/random.js';
import { foldText, searchTerms } from '../../src/store/search-text.js';

const SYLLABLES = ['ka', 'ro', 'mi', 'zel', 'da', 'po', 'ke', 'mon', 'su', 'per', 'ma', 'ri', 'o', 'ex', 'ii', '64', 'tri', 'nu'];

interface Item {
  id: number;
  name: string;
  priced: boolean;
}

function items(count: number): Item[] {
  const rnd = seededRandom(7);
  const out: Item[] = [];
  for (let i = 0; i < count; i++) {
    const words = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () =>
      Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => SYLLABLES[Math.floor(rnd() * SYLLABLES.length)]!).join(''),
    );
    out.push({ id: 10 + i * 2, name: words.join(' '), priced: rnd() < 0.5 });
  }
  return out;
}

async function indexOf(all: readonly Item[]): Promise<SearchIndex> {
  const builder = new SearchIndexBuilder();
  for (const item of all) builder.addItem(item.id, item.name, 'nes', 'game');
  for (const item of all) if (item.priced) builder.addPriced(item.id);
  return builder.build(1, async () => {});
}

/** What the index must answer: every item whose name holds each term, in id order. */
function scanned(all: readonly Item[], query: IndexQuery, offset: number, limit: number) {
  const found = all.filter((item) => (!query.pricedOnly || item.priced) && query.terms.every((term) => item.name.includes(term)));
  return { total: found.length, ids: found.slice(offset, offset + limit).map((item) => item.id) };
}

describe('kept term unions', () => {
  it('answer exactly on first use, when kept, and after being let go, alone and combined', async () => {
    const all = items(4000);
    const index = await indexOf(all);
    const bytesBefore = index.bytes;
    // More distinct terms than are kept, so that the least recently used go and come back.
    const terms = [...new Set(all.flatMap((item) => item.name.split(' ')).flatMap((word) => [word, word.slice(0, 2), word.slice(1, 4)]))].filter((term) => term !== '').slice(0, 150);
    assert.ok(terms.length > 100, `${terms.length} terms`);
    const rnd = seededRandom(3);
    for (const round of [terms, [...terms].reverse(), terms]) {
      for (const term of round) {
        const other = terms[Math.floor(rnd() * terms.length)]!;
        const offset = Math.floor(rnd() * 40);
        for (const query of [{ terms: [term] }, { terms: [term, other] }, { terms: [term], pricedOnly: true }, { terms: [other, term], pricedOnly: true }]) {
          assert.deepEqual(index.page(query, offset, 7), scanned(all, query, offset, 7), JSON.stringify({ ...query, offset }));
        }
      }
    }
    assert.deepEqual(index.page({ terms: [], pricedOnly: true }, 3, 5), scanned(all, { terms: [], pricedOnly: true }, 3, 5));
    assert.deepEqual(index.page({ terms: [] }, 0, 5), scanned(all, { terms: [] }, 0, 5));
    assert.ok(index.bytes > bytesBefore, 'kept unions are counted in the index memory');
    assert.ok(index.bytes <= bytesBefore + 64 * Math.ceil(all.length / 32) * 4, 'at most 64 unions are kept');
  });
});

describe('terms the index leaves to the store', () => {
  it('an empty term is refused (null, so the store answers) instead of scanning the tokens for ever', async () => {
    const index = await indexOf(items(200));
    assert.equal(index.page({ terms: [''] }, 0, 10), null);
    assert.equal(index.page({ terms: ['ka', ''] }, 0, 10), null);
    assert.equal(index.allIds({ terms: [''] }), null);
    assert.notEqual(index.page({ terms: ['ka'] }, 0, 10), null);
  });
});

describe('white space in names and terms', () => {
  it('the index cuts names where searchTerms cuts terms (Unicode White_Space), so it finds what the store finds', async () => {
    // Names as the store keeps them (folded), with separators of every kind and a U+FEFF, which is not
    // white space (JavaScript's \s takes it; the contract does not).
    const names = ['super\tmario 64', 'mario\u0085kart', 'zel\u00a0da', 'ab\ufeffcd', 'poke\u3000mon\nsnap', 'ex\u2028ii', 'plain name'];
    const all = names.map((name, i) => ({ id: i + 1, name: foldText(name), priced: true }));
    const index = await indexOf(all);
    const searches = ['mario', 'mario\tkart', 'kart\u0085mario', 'b\ufeffc', 'ab', 'cd', 'zel da', 'zel\u00a0da', 'mon\u3000poke', 'ex\u2028ii', 'o\nm', 'name\u000bplain'];
    for (const search of searches) {
      const terms = searchTerms(search);
      assert.ok(terms.every((term) => !/\p{White_Space}/u.test(term)), `${JSON.stringify(search)}: no term holds white space`);
      const answer = index.page({ terms }, 0, 100);
      assert.notEqual(answer, null, `${JSON.stringify(search)}: the index answers`);
      assert.deepEqual(answer, scanned(all, { terms }, 0, 100), JSON.stringify(search));
    }
    assert.deepEqual(searchTerms('mario\tkart\r\n64\u0085x\u00a0y\u3000z'), ['mario', 'kart', '64', 'x', 'y', 'z']);
    assert.deepEqual(searchTerms('ab\ufeffcd'), ['ab\ufeffcd']);
  });
});
