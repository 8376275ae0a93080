// The read cache keeps list totals by a key built from the filters: two different filters must never share
// a key, or one list answers with the other's total. Filter values are free text, so a separator character
// inside one value (NUL, once the separator) must not make it look like two values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterKey, type ItemFilters } from '../../src/store/repositories/catalogue.repository.js';

describe('filterKey', () => {
  it('gives different filters different keys, whatever characters the values hold', () => {
    const filters: ItemFilters[] = [
      {},
      { search: 'a\u0000b' },
      { search: 'a', platform: 'b' },
      { search: 'a', platform: 'b', category: '\u0000' },
      { search: 'a\u0000', platform: '' },
      { search: 'a', platform: '\u0000b' },
      { platform: 'nes', category: 'game' },
      { platform: 'nes\u0000game' },
      { category: 'nes' },
      { search: '","' },
      { search: '"', platform: '"' },
      { upc: '045496870010' },
      { search: '045496870010' },
    ];
    const keys = filters.map((f) => filterKey('catalogue', f));
    assert.equal(new Set(keys).size, filters.length, `keys collide: ${JSON.stringify(keys)}`);
    assert.notEqual(filterKey('catalogue', { search: 'a' }), filterKey('prices', { search: 'a' }), 'the list is part of the key');
  });

  it('gives the same key to filters that select the same rows (platform and category ignore case)', () => {
    assert.equal(filterKey('catalogue', { platform: 'NES', category: 'Game' }), filterKey('catalogue', { platform: 'nes', category: 'game' }));
  });
});
