// canonicalTimestamp reads the canonical form (the one bulk loads are made of) from its digits instead of
// a round trip through Date; it must accept and refuse exactly what that round trip does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalTimestamp } from '../../src/domain/timestamps.js';

const roundTrip = (value: string): string | null => {
  const ms = Date.parse(value);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === value ? value : null;
};
const two = (n: number) => String(n).padStart(2, '0');

describe('canonicalTimestamp on the canonical form', () => {
  it('agrees with a round trip through Date on every month and day 0-32, leap and common years, and times out of range', () => {
    let checked = 0;
    for (const year of ['0000', '1900', '1970', '2000', '2023', '2024', '2100', '2400', '9999']) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          for (const time of ['00:00:00.000', '23:59:59.999', '24:00:00.000', '12:60:00.000', '12:00:60.000']) {
            const value = `${year}-${two(month)}-${two(day)}T${time}Z`;
            assert.equal(canonicalTimestamp(value), roundTrip(value), value);
            checked++;
          }
        }
      }
    }
    assert.ok(checked > 20_000);
  });

  it('refuses days that do not exist and keeps those that do', () => {
    assert.equal(canonicalTimestamp('2026-02-29T00:00:00.000Z'), null);
    assert.equal(canonicalTimestamp('2024-02-29T00:00:00.000Z'), '2024-02-29T00:00:00.000Z');
    assert.equal(canonicalTimestamp('2100-02-29T00:00:00.000Z'), null);
    assert.equal(canonicalTimestamp('2026-04-31T12:00:00.000Z'), null);
    assert.equal(canonicalTimestamp('2026-12-31T23:59:59.999Z'), '2026-12-31T23:59:59.999Z');
  });
});
