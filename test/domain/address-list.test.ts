// Addresses and CIDR ranges (src/domain/address-list.ts), TRUST_PROXY (src/config.ts) and the client address
// it decides (src/http/client-address.ts): pure functions, no store.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { AddressMatcher, parseAddressList, parseRange } from '../../src/domain/address-list.js';
import { clientAddressResolver, UNKNOWN_ADDRESS } from '../../src/http/client-address.js';
import { parseAllowedAddresses } from '../../src/services/key-fields.js';

describe('addresses and ranges', () => {
  test('canonical form: a range by its network address, /32 and /128 as the address, IPv4-mapped IPv6 as IPv4', () => {
    const cases: Array<[string, string | null]> = [
      ['127.0.0.1', '127.0.0.1'],
      [' 10.1.2.3/8 ', '10.0.0.0/8'],
      ['1.2.3.4/32', '1.2.3.4'],
      ['0.0.0.0/0', '0.0.0.0/0'],
      ['::ffff:127.0.0.1', '127.0.0.1'],
      ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
      ['2001:DB8::1', '2001:db8::1'],
      ['2001:db8:0:0:1:0:0:1/64', '2001:db8::/64'],
      ['2001:db8::1/128', '2001:db8::1'],
      ['::/0', '::/0'],
      // Not addresses or ranges:
      ['1.2.3', null],
      ['1.2.3.4/33', null],
      ['1.2.3.4/', null],
      ['1.2.3.4/-1', null],
      ['2001:db8::1/129', null],
      ['fe80::1%eth0', null],
      ['256.0.0.1', null],
      ['localhost', null],
      ['203.0.113.7:8080', null],
    ];
    for (const [input, expected] of cases) assert.equal(parseRange(input)?.text ?? null, expected, input);
  });

  test('matching: prefixes of any length, IPv4 clients as IPv4-mapped IPv6 too, IPv6 apart from IPv4', () => {
    const m = new AddressMatcher(parseAddressList('127.0.0.0/8, 2001:db8::/32 10.0.0.5\n192.168.1.128/25').ranges);
    const cases: Array<[string, boolean]> = [
      ['127.0.0.1', true],
      ['127.255.255.255', true],
      ['::ffff:127.0.0.2', true],
      ['128.0.0.1', false],
      ['10.0.0.5', true],
      ['10.0.0.6', false],
      ['192.168.1.200', true],
      ['192.168.1.127', false],
      ['2001:db8:1::5', true],
      ['2001:db9::1', false],
      ['::1', false],
      [UNKNOWN_ADDRESS, false],
    ];
    for (const [address, expected] of cases) assert.equal(m.matches(address), expected, address);
    assert.equal(new AddressMatcher([]).matches('127.0.0.1'), false, 'an empty matcher allows nothing');
  });

  test('an IPv4 client falls in an IPv6 range that holds its IPv4-mapped form; an IPv6 client in no IPv4 range', () => {
    const holds = (list: string, address: string) => new AddressMatcher(parseAddressList(list).ranges).matches(address);
    for (const list of ['::/0', '::/1', '::ffff:0:0/96', '::ffff:127.0.0.0/104', '::fffe:0:0/95', '0:0:0:0:0:ffff::/80']) {
      assert.equal(holds(list, '127.0.0.1'), true, `127.0.0.1 in ${list}`);
      assert.equal(holds(list, '::ffff:127.0.0.1'), true, `::ffff:127.0.0.1 in ${list}`);
    }
    for (const list of ['::/96', '::ffff:128.0.0.0/104', '2001:db8::/32', '::1', '64:ff9b::/96', '8000::/1']) {
      assert.equal(holds(list, '127.0.0.1'), false, `127.0.0.1 not in ${list}`);
    }
    assert.equal(holds('0.0.0.0/0', '::1'), false);
    assert.equal(holds('0.0.0.0/0', '2001:db8::1'), false);
    assert.equal(holds('::/0', '2001:db8::1'), true);
  });

  test("a key's list: duplicates folded, malformed entries named, at most 50", () => {
    assert.deepEqual(parseAllowedAddresses('10.0.0.1, 10.0.0.1/32,::ffff:10.0.0.1 10.0.0.0/8'), ['10.0.0.1', '10.0.0.0/8']);
    assert.deepEqual(parseAllowedAddresses(''), []);
    assert.throws(() => parseAllowedAddresses('10.0.0.1, 10.0.0.300, nope'), /"10\.0\.0\.300", "nope" are not IP addresses or CIDR ranges/);
    const fifty = Array.from({ length: 50 }, (_, i) => `10.0.${i}.1`);
    assert.equal(parseAllowedAddresses(fifty).length, 50);
    assert.throws(() => parseAllowedAddresses([...fifty, '10.1.0.1']), /at most 50 addresses or ranges \(got 51\)/);
    assert.equal(parseAllowedAddresses([...fifty, '10.0.0.1']).length, 50, 'a duplicate does not count twice');
  });
});

describe('TRUST_PROXY', () => {
  test('unset or empty: no proxy is trusted; a list is kept in canonical form', () => {
    assert.equal(loadConfig({}).trustProxy, null);
    assert.equal(loadConfig({ TRUST_PROXY: ' ' }).trustProxy, null);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.1.0.0/16,::1' }).trustProxy, ['127.0.0.1', '10.1.0.0/16', '::1']);
  });

  test('an entry that is no address or range stops the start with a message naming the variable and the entry', () => {
    assert.throws(() => loadConfig({ TRUST_PROXY: '127.0.0.1,proxy.internal' }), (error: Error) => {
      assert.equal(error.name, 'ConfigError');
      assert.match(error.message, /^TRUST_PROXY: expected comma-separated IP addresses or CIDR ranges .*"proxy\.internal"/);
      return true;
    });
    assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.0/40' }), /TRUST_PROXY: .*"10\.0\.0\.0\/40"/);
  });
});

describe('the client address', () => {
  const request = (peer: string | undefined, forwardedFor?: string | string[]) =>
    ({ socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } }) as unknown as IncomingMessage;

  test('without TRUST_PROXY: always the socket peer (IPv4-mapped as IPv4), X-Forwarded-For ignored', () => {
    const of = clientAddressResolver(null);
    assert.equal(of(request('127.0.0.1', '203.0.113.7')), '127.0.0.1');
    assert.equal(of(request('::ffff:127.0.0.1')), '127.0.0.1');
    assert.equal(of(request('::1')), '::1');
    assert.equal(of(request(undefined)), UNKNOWN_ADDRESS);
  });

  test('behind trusted proxies: the right-most address of X-Forwarded-For that is not a trusted proxy', () => {
    const of = clientAddressResolver(['127.0.0.1', '10.0.0.0/8']);
    assert.equal(of(request('127.0.0.1', '203.0.113.7')), '203.0.113.7');
    assert.equal(of(request('::ffff:127.0.0.1', '203.0.113.7')), '203.0.113.7', 'the peer as IPv4-mapped IPv6 is trusted too');
    assert.equal(of(request('127.0.0.1', '198.51.100.1, 203.0.113.7')), '203.0.113.7', 'what the client wrote stands left and is not believed');
    assert.equal(of(request('127.0.0.1', '203.0.113.7, 10.0.0.2')), '203.0.113.7', 'past every trusted proxy');
    assert.equal(of(request('127.0.0.1', ['203.0.113.7', '10.0.0.2'])), '203.0.113.7', 'header lines given twice are one list');
    assert.equal(of(request('127.0.0.1', '::ffff:203.0.113.7')), '203.0.113.7');
    assert.equal(of(request('127.0.0.1')), '127.0.0.1', 'no header: the proxy itself');
    assert.equal(of(request('127.0.0.1', '10.0.0.3, 10.0.0.2')), '10.0.0.3', 'only proxies: the left-most');
    assert.equal(of(request('127.0.0.1', 'not-an-address, 10.0.0.2')), UNKNOWN_ADDRESS, 'garbage past the proxies is no address');
    assert.equal(of(request('192.0.2.1', '203.0.113.7')), '192.0.2.1', 'from a peer that is no trusted proxy, the header is ignored');
  });
});
