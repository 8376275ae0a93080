// isoOf (src/metering/periods.ts) writes the request log's and the rejections' times with the second held:
// it must write exactly what Date's toISOString writes, whatever times come in whatever order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dayOf, isoOf } from '../../src/metering/periods.js';

test("isoOf writes what toISOString writes: milliseconds padded, seconds alternating, before 1970, Date's limits, fractions", () => {
  const times = [
    0, 1, 9, 10, 99, 100, 999, 1000, 1001, Date.parse('2026-11-27T03:10:59.999Z'), Date.parse('2026-11-27T03:11:00.000Z'),
    Date.parse('2026-11-27T03:10:59.005Z'), -1, -999, -1000, -1001, Date.parse('1969-12-31T23:59:59.990Z'),
    Date.parse('0000-01-01T00:00:00.000Z'), Date.parse('9999-12-31T23:59:59.999Z'), Date.parse('+010000-01-01T00:00:00.000Z'),
    Date.parse('-000001-12-31T23:59:59.999Z'), 1.5, Date.parse('2026-02-28T23:59:59.999Z') + 1, Date.parse('2028-02-29T12:00:00.042Z'),
  ];
  let seed = 7;
  for (let i = 0; i < 2000; i++) {
    seed = (seed * 48271) % 2147483647;
    times.push(Date.parse('2020-01-01T00:00:00.000Z') + (seed % 400_000_000_000), times[times.length - 1]! + (seed % 3));
  }
  for (const ms of times) assert.equal(isoOf(ms), new Date(ms).toISOString(), String(ms));
  assert.throws(() => isoOf(8.64e15 + 1), RangeError, 'past what a Date holds: refused as Date refuses it');
});

test('dayOf names the UTC day as toISOString does, for days in any order and past what it keeps', () => {
  let seed = 11;
  for (let i = 0; i < 10_000; i++) {
    seed = (seed * 48271) % 2147483647;
    // Days from 1960 on, many more than the 4,096 it keeps, and the day before and after each.
    const ms = Date.parse('1960-01-01T00:00:00.000Z') + (seed % 2_500_000_000) * 1000;
    for (const at of [ms, ms - 86_400_000, ms + 86_400_000]) assert.equal(dayOf(at), new Date(at).toISOString().slice(0, 10), String(at));
  }
});
