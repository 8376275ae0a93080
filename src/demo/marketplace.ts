/**
 * The marketplace between the demo and trader accounts: listings from each one's own shelf, sales of some
 * of them (with the offers that led there), offers on the other side's open listings, and the transactions
 * with their shipping.
 */
import type { DatasetCollectionItem, DatasetListing, DatasetOffer, DatasetTransaction } from '../domain/dataset.js';
import { assignIds, CONDITION_LABEL, type AccountBuilder } from './account-builder.js';
import type { Owned } from './collection.js';
import { weighted, type Rng } from './random.js';
import { MARKETPLACE } from './reference-data.js';
import { DAY, HOUR, iso, MINUTE, round2 } from './units.js';

interface ListingDraft {
  row: DatasetListing;
  createdMs: number;
  updatedMs: number;
}

/** A sale to come: its listing is made first, its offer and transaction once listings have ids. */
interface SalePlan {
  status: DatasetTransaction['status'];
  listing: ListingDraft;
  buyer: string;
  createdMs: number;
  acceptedAmount: number | null;
}

export interface Marketplace {
  listings: DatasetListing[];
  offers: DatasetOffer[];
  transactions: DatasetTransaction[];
}

const ACCOUNTS = ['demo', 'trader'] as const;
const other = (a: string): string => (a === 'demo' ? 'trader' : 'demo');

const SALE_STATUSES: readonly DatasetTransaction['status'][] = ['COMPLETED', 'COMPLETED', 'COMPLETED', 'DELIVERED',
  'DELIVERED', 'SHIPPED', 'SHIPPED', 'PAID', 'CANCELLED', 'REFUNDED'];
const SOLD_LIKE = new Set<DatasetTransaction['status']>(['COMPLETED', 'DELIVERED', 'SHIPPED']);
/** Listings not sold, per seller. */
const OPEN_LISTINGS: Readonly<Record<(typeof ACCOUNTS)[number], readonly DatasetListing['status'][]>> = {
  demo: ['ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE',
    'RESERVED', 'CANCELLED', 'CANCELLED', 'CANCELLED'],
  trader: [...Array<DatasetListing['status']>(20).fill('ACTIVE'), 'RESERVED', 'RESERVED', 'CANCELLED', 'CANCELLED',
    'CANCELLED', 'CANCELLED'],
};
const CARRIERS = weighted(MARKETPLACE.carriers);
const ALNUM_UPPER = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function trackingNumber(r: Rng, carrier: string): string {
  const digits = (n: number): string => {
    let s = '';
    for (let i = 0; i < n; i++) s += String(r.int(10));
    return s;
  };
  switch (carrier) {
    case 'UPS': {
      let s = '1Z';
      for (let i = 0; i < 6; i++) s += ALNUM_UPPER[r.int(36)];
      return s + digits(10);
    }
    case 'USPS':
      return `9400${digits(18)}`;
    case 'FedEx':
      return digits(12);
    default:
      return digits(10);
  }
}

/** Listings from the sellers' own shelves (rows already sold back the sold listings), and the sales planned. */
function listingsAndSales(b: AccountBuilder, collection: readonly Owned[]): { listings: ListingDraft[]; sales: SalePlan[] } {
  const r = b.r;
  const now = b.ctx.nowMs;
  const listings: ListingDraft[] = [];
  const sales: SalePlan[] = [];
  const usedRows = new Set<number>();
  const takeRow = (account: string, status: DatasetCollectionItem['status']): DatasetCollectionItem => {
    const mine = collection.filter((o) => o.row.account === account && !usedRows.has(o.row.id as number));
    const preferred = mine.filter((o) => o.row.status === status);
    const pool = preferred.length > 0 ? preferred : mine.filter((o) => o.row.status !== 'WISHLIST');
    const pick = r.pick(pool.length > 0 ? pool : collection.filter((o) => o.row.account === account));
    usedRows.add(pick.row.id as number);
    return pick.row;
  };
  const makeListing = (seller: string, source: DatasetCollectionItem, status: DatasetListing['status'],
    createdMs: number): ListingDraft => {
    const info = b.lookup(source.masterItemId);
    const market = b.market(source.masterItemId, source.condition);
    const price = market !== null ? round2(Math.max(1, market * r.between(0.95, 1.35))) : round2(r.between(8, 120));
    const hardware = info.core.category === 'console';
    const updatedMs = status === 'ACTIVE' && r.chance(0.6) ? createdMs : b.past(createdMs + r.between(HOUR, 5 * DAY));
    const draft: ListingDraft = {
      row: {
        account: seller,
        masterItemId: source.masterItemId,
        title: `${info.item.name.includes(info.item.platform) ? info.item.name
          : `${info.item.name} - ${info.item.platform}`} (${CONDITION_LABEL[source.condition]})${
          r.pick(MARKETPLACE.listingTitleTails)}`,
        condition: source.condition,
        status,
        price,
        currency: 'USD',
        acceptsTrade: r.chance(0.4),
        shippingCost: r.pick(hardware ? MARKETPLACE.hardwareShipping : MARKETPLACE.shipping),
        publicToken: b.token(),
      },
      createdMs,
      updatedMs,
    };
    listings.push(draft);
    return draft;
  };

  for (const seller of ACCOUNTS) {
    const buyer = other(seller);
    for (const status of SALE_STATUSES) {
      const source = takeRow(seller, SOLD_LIKE.has(status) ? 'SOLD' : 'OWNED');
      const listingStatus: DatasetListing['status'] = SOLD_LIKE.has(status) || status === 'REFUNDED' ? 'SOLD'
        : status === 'PAID' ? 'RESERVED' : 'ACTIVE';
      // Old enough that the estimated delivery of the sale has passed too.
      const listing = makeListing(seller, source, listingStatus, now - r.between(25 * DAY, 200 * DAY));
      const createdMs = r.between(listing.createdMs + DAY, now - 9 * DAY);
      sales.push({ status, listing, buyer, createdMs, acceptedAmount: null });
    }
    for (const status of OPEN_LISTINGS[seller]) {
      const createdMs = status === 'CANCELLED' ? now - r.between(10 * DAY, 200 * DAY) : now - r.between(HOUR, 90 * DAY);
      makeListing(seller, takeRow(seller, 'OWNED'), status, createdMs);
    }
  }
  assignIds(listings, (l, id) => (l.row.id = id));
  return { listings, sales };
}

const money = (n: number): string => n.toFixed(2);

/** Offers: the accepted ones led to some of the sales; the rest sit on the other side's open listings. */
function makeOffers(b: AccountBuilder, collection: readonly Owned[], listings: readonly ListingDraft[],
  sales: readonly SalePlan[]): DatasetOffer[] {
  const r = b.r;
  const now = b.ctx.nowMs;
  const offers: { row: DatasetOffer; createdMs: number }[] = [];
  const tradeCandidates = (account: string): DatasetCollectionItem[] => {
    const listed = new Set(listings.filter((l) => l.row.account === account).map((l) => l.row.masterItemId));
    return collection
      .filter((o) => o.row.account === account && o.row.status === 'OWNED' && !listed.has(o.row.masterItemId))
      .map((o) => o.row);
  };
  const addOffer = (offerer: string, l: ListingDraft, status: DatasetOffer['status'], createdMs: number,
    amount: number, trade: DatasetCollectionItem | null): void => {
    const tradeName = trade !== null ? b.lookup(trade.masterItemId).item.name : '';
    const message = trade !== null && amount === 0 ? `Straight swap for my ${tradeName}?`
      : trade !== null
      ? r.pick([`Would you trade for my ${tradeName}? I'd add $${money(amount)}.`,
        `Offering my ${tradeName} (${CONDITION_LABEL[trade.condition]}) + $${money(amount)}, smoke-free home.`])
      : r.pick([`Would you take $${money(amount)}?`, `Hi! Can you do $${money(amount)} shipped?`,
        `I can pay $${money(amount)} today.`, `Is the manual included? I'd offer $${money(amount)}.`,
        `Is this the "Player's Choice" version? $${money(amount)} if so.`, `¿Aceptas $${money(amount)}? Gracias.`]);
    let updatedMs = createdMs;
    if (status !== 'PENDING') updatedMs = b.past(createdMs + (status === 'EXPIRED' ? 2 * DAY : r.between(HOUR, DAY)));
    offers.push({
      row: {
        account: offerer,
        listingId: l.row.id as number,
        amount,
        tradeItemId: trade !== null ? (trade.id as number) : null,
        message,
        status,
        createdAt: iso(createdMs),
        updatedAt: iso(Math.max(updatedMs, createdMs)),
      },
      createdMs,
    });
  };

  for (const sale of sales) {
    if (sale.status === 'CANCELLED' || !r.chance(0.4)) continue;
    const amount = round2(sale.listing.row.price * r.between(0.8, 0.95));
    const createdMs = r.between(sale.listing.createdMs + HOUR, sale.createdMs - HOUR);
    addOffer(sale.buyer, sale.listing, 'ACCEPTED', createdMs, amount, null);
    sale.acceptedAmount = amount;
  }
  for (const offerer of ACCOUNTS) {
    const targets = listings.filter((l) => l.row.account !== offerer && l.row.status !== 'SOLD');
    const count = offerer === 'demo' ? 15 : 10;
    const trades = tradeCandidates(offerer);
    for (let n = 0; n < count && targets.length > 0; n++) {
      const l = r.pick(targets);
      const createdMs = b.past(r.between(l.createdMs + MINUTE, now - MINUTE));
      let status: DatasetOffer['status'];
      if (l.row.status === 'CANCELLED') status = r.pick(['DECLINED', 'EXPIRED'] as const);
      else status = r.pick(['PENDING', 'PENDING', 'PENDING', 'DECLINED', 'WITHDRAWN', 'EXPIRED'] as const);
      if (status === 'EXPIRED' && createdMs > now - 3 * DAY) status = 'PENDING';
      const trade = l.row.acceptsTrade && trades.length > 0 && r.chance(0.5) ? r.pick(trades) : null;
      // Cash on top of a trade is a whole-dollar sum or nothing at all.
      const amount = trade === null ? round2(l.row.price * r.between(0.6, 0.95))
        : r.chance(0.4) ? 0 : Math.max(5, Math.round(l.row.price * r.between(0.1, 0.5)));
      addOffer(offerer, l, status, createdMs, amount, trade);
    }
  }
  assignIds(offers, (o, id) => (o.row.id = id));
  return offers.map((o) => o.row);
}

/** One transaction per sale, shipped, delivered or not as its status says; its listing was last touched then. */
function makeTransactions(b: AccountBuilder, sales: readonly SalePlan[]): DatasetTransaction[] {
  const r = b.r;
  const transactions: { row: DatasetTransaction; createdMs: number }[] = [];
  for (const sale of sales) {
    const carrier = CARRIERS.pick(r);
    const amount = sale.acceptedAmount ?? sale.listing.row.price;
    const estimatedMs = sale.createdMs + r.intBetween(3, 7) * DAY;
    const delivered = sale.status === 'DELIVERED' || sale.status === 'COMPLETED' || sale.status === 'REFUNDED';
    const actualMs = delivered ? b.past(Math.max(sale.createdMs + DAY, estimatedMs + r.between(-DAY, 2 * DAY))) : null;
    let updatedMs: number;
    switch (sale.status) {
      case 'PAID':
      case 'CANCELLED':
        updatedMs = sale.createdMs + r.between(MINUTE, 12 * HOUR);
        break;
      case 'SHIPPED':
        updatedMs = sale.createdMs + r.between(12 * HOUR, 2 * DAY);
        break;
      case 'DELIVERED':
        updatedMs = actualMs as number;
        break;
      default:
        updatedMs = (actualMs as number) + r.between(HOUR, 3 * DAY);
    }
    updatedMs = b.past(updatedMs);
    const l = sale.listing;
    if (l.row.status !== 'ACTIVE') l.updatedMs = Math.max(l.updatedMs, b.past(sale.createdMs));
    transactions.push({
      row: {
        buyer: sale.buyer,
        seller: l.row.account,
        listingId: l.row.id as number,
        amount,
        platformFee: round2(amount * 0.08),
        status: sale.status,
        trackingNumber: trackingNumber(r, carrier),
        shippingCarrier: carrier,
        estimatedDelivery: iso(estimatedMs),
        actualDelivery: actualMs === null ? null : iso(actualMs),
        createdAt: iso(sale.createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs: sale.createdMs,
    });
  }
  assignIds(transactions, (t, id) => (t.row.id = id));
  return transactions.map((t) => t.row);
}

export function buildMarketplace(b: AccountBuilder, collection: readonly Owned[]): Marketplace {
  const { listings, sales } = listingsAndSales(b, collection);
  const offers = makeOffers(b, collection, listings, sales);
  const transactions = makeTransactions(b, sales);
  for (const l of listings) {
    l.row.createdAt = iso(l.createdMs);
    l.row.updatedAt = iso(Math.max(l.updatedMs, l.createdMs));
  }
  return { listings: listings.map((l) => l.row), offers, transactions };
}
