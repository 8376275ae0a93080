/**
 * The client's address, for both surfaces (a key's allowed addresses, its last use, the settings screen's
 * security log and lock-out warning): the socket's peer, unless that peer is a proxy named in TRUST_PROXY.
 * Then X-Forwarded-For is read from the right (each proxy appends the address it was reached from), past
 * every trusted proxy, and the first address not in TRUST_PROXY is the client's. A client cannot forge its
 * way in: whatever it writes into the header stands left of what the trusted proxies append.
 * IPv4-mapped IPv6 (::ffff:127.0.0.1, as a dual-stack socket reports IPv4 peers) is given as IPv4.
 */
import type { IncomingMessage } from 'node:http';
import { addressBytes, AddressMatcher, canonicalAddress, parseAddressList } from '../domain/address-list.js';

/**
 * What is returned for a hop that is not an address (garbage in X-Forwarded-For beyond the trusted
 * proxies): it falls in no allowed range, so a key with a list is refused from it.
 */
export const UNKNOWN_ADDRESS = 'unknown';

export type ClientAddressOf = (raw: IncomingMessage) => string;

function forwardedFor(raw: IncomingMessage): string[] {
  const header = raw.headers['x-forwarded-for'];
  if (header === undefined) return [];
  // Node joins repeated X-Forwarded-For lines with ", ": one list, in order.
  return (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
}

/** Peers' canonical forms held (a pure function of the text); past this many, the held ones are dropped. */
const PEERS_HELD = 10_000;

export function clientAddressResolver(trustProxy: readonly string[] | null): ClientAddressOf {
  // Every request of a connection has the same peer, and a server sees few peers: parsing and formatting the
  // address again for each request was 1.5-2% of an item GET's CPU.
  const peers = new Map<string, string>();
  const peerOf = (raw: IncomingMessage) => {
    const text = raw.socket?.remoteAddress ?? UNKNOWN_ADDRESS;
    let address = peers.get(text);
    if (address === undefined) {
      address = canonicalAddress(text);
      if (peers.size >= PEERS_HELD) peers.clear();
      peers.set(text, address);
    }
    return address;
  };
  if (trustProxy === null || trustProxy.length === 0) return peerOf;
  const trusted = new AddressMatcher(parseAddressList(trustProxy).ranges);
  return (raw) => {
    let address = peerOf(raw);
    if (!trusted.matches(address)) return address;
    const hops = forwardedFor(raw);
    for (let i = hops.length - 1; i >= 0; i--) {
      const bytes = addressBytes(hops[i]!);
      if (bytes === null) return UNKNOWN_ADDRESS;
      address = canonicalAddress(hops[i]!);
      if (!trusted.matchesBytes(bytes)) return address;
    }
    // Every hop is a trusted proxy: the left-most is as far as anyone can tell.
    return address;
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's address by the TRUST_PROXY rule (clientAddressResolver), worked out when read. */
    readonly clientAddress: string;
  }
}
