/**
 * The dataset file of `shelfapi load` (docs/contract.md, "Operator command line"), as TypeScript types.
 * Validation of untrusted files lives in src/store/load/validate-dataset.ts; the demo generator produces
 * values of these types directly.
 */
import type { AccountPlan, PlanStatus, Scope } from './scopes.js';
import type { CatalogueStatus, Condition } from './values.js';

export interface DatasetAccount {
  ref: string;
  email: string;
  plan: AccountPlan;
  planStatus?: PlanStatus;
}

export interface DatasetKey {
  ref: string;
  account: string; // account ref
  name: string;
  scopes: Scope[];
  expiresAt?: string | null;
  revoked?: boolean;
}

export interface DatasetCatalogueItem {
  masterItemId?: number;
  name: string;
  slug: string;
  category: string;
  platform: string;
  status: CatalogueStatus;
  subCategory?: string | null;
  modelNumber?: string | null;
  releaseYear?: number | null;
  region?: string | null;
  format?: string | null;
  developer?: string | null;
  publisher?: string | null;
  genre?: string | null;
  manufacturer?: string | null;
  description?: string | null;
  imageUrl?: string | null;
}

export interface DatasetPrice {
  masterItemId: number;
  upc: string;
  loose?: number | null;
  cib?: number | null;
  new?: number | null;
  boxOnly?: number | null;
  manualOnly?: number | null;
  scrapeDate: string;
}

export interface DatasetCollectionItem {
  id?: number;
  account: string;
  masterItemId: number;
  condition: Condition;
  status: 'OWNED' | 'WISHLIST' | 'SOLD';
  purchasePrice: number;
  acquiredAt: string;
  location: string;
  isFavorite: boolean;
  createdAt?: string;
  updatedAt?: string;
}

export interface DatasetListing {
  id?: number;
  account: string;
  masterItemId: number;
  title: string;
  condition: Condition;
  status: 'ACTIVE' | 'RESERVED' | 'SOLD' | 'CANCELLED';
  price: number;
  currency: string;
  acceptsTrade: boolean;
  shippingCost: number;
  publicToken?: string;
  createdAt?: string;
  updatedAt?: string;
}

export interface DatasetOffer {
  id?: number;
  account: string;
  listingId: number;
  amount: number;
  tradeItemId?: number | null;
  message: string;
  status: 'PENDING' | 'ACCEPTED' | 'DECLINED' | 'WITHDRAWN' | 'EXPIRED';
  createdAt?: string;
  updatedAt?: string;
}

export interface DatasetTransaction {
  id?: number;
  buyer: string;
  seller: string;
  listingId: number;
  amount: number;
  platformFee: number;
  status: 'PAID' | 'SHIPPED' | 'DELIVERED' | 'COMPLETED' | 'CANCELLED' | 'REFUNDED';
  trackingNumber: string;
  shippingCarrier: string;
  estimatedDelivery: string;
  actualDelivery?: string | null;
  createdAt?: string;
  updatedAt?: string;
}

export interface Dataset {
  accounts?: DatasetAccount[];
  keys?: DatasetKey[];
  catalogue?: DatasetCatalogueItem[];
  prices?: DatasetPrice[];
  collection?: DatasetCollectionItem[];
  listings?: DatasetListing[];
  offers?: DatasetOffer[];
  transactions?: DatasetTransaction[];
}
