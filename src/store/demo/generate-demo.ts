/**
 * Demo data for `shelfapi seed --demo [--items N]`: a believable, deterministic retro-games catalogue with
 * aggregator prices, plus two accounts ('demo' and its counterparty 'trader') whose collection, listings,
 * offers and transactions reference it. The catalogue and prices are generators so that a million items
 * never sit in memory; every item is a pure function of (seed, id), which lets prices and the account rows
 * look items up again without keeping them.
 */
import type {
  DatasetAccount,
  DatasetCatalogueItem,
  DatasetCollectionItem,
  DatasetKey,
  DatasetListing,
  DatasetOffer,
  DatasetPrice,
  DatasetTransaction,
} from '../../domain/dataset.js';
import { SCOPES } from '../../domain/scopes.js';
import type { CatalogueStatus, Condition } from '../../domain/values.js';

export interface DemoOptions {
  items: number;
  seed?: number;
  now: Date;
}

export type DemoCatalogueItem = DatasetCatalogueItem & { masterItemId: number };

export interface DemoData {
  accounts: DatasetAccount[];
  keys: DatasetKey[];
  /** Lazy, and says its size: a progress display shows how far a large seed is. */
  catalogue(): Iterable<DemoCatalogueItem> & { readonly size: number };
  /** Lazy; the record count is not known up front, so it says how far through the items it is. */
  prices(): Iterable<DatasetPrice> & { fraction(): number };
  collection: DatasetCollectionItem[];
  listings: DatasetListing[];
  offers: DatasetOffer[];
  transactions: DatasetTransaction[];
}

export const DEFAULT_DEMO_SEED = 20_240_601;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// ---------------------------------------------------------------------------------------------------------
// Randomness. One mutable generator is re-seeded per row (no allocation per row); row seeds come from a hash
// of (seed, id, salt) so that any row can be regenerated on its own.

class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  reset(seed: number): this {
    this.s = seed >>> 0;
    return this;
  }
  /** mulberry32 */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  intBetween(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  between(lo: number, hi: number): number {
    return lo + this.next() * (hi - lo);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(arr: readonly T[]): T {
    return arr[this.int(arr.length)] as T;
  }
  /** Roughly standard normal; three uniforms are plenty for price spread and far cheaper than Box-Muller. */
  normal(): number {
    return (this.next() + this.next() + this.next() - 1.5) * 2;
  }
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function rowSeed(seed: number, id: number, salt: number): number {
  // ids can exceed 2^32 in theory; fold the high part in so such ids still get distinct streams.
  const hi = Math.floor(id / 4294967296);
  return fmix((fmix((seed ^ salt) >>> 0) + Math.imul(id >>> 0, 0x9e3779b1) + Math.imul(hi, 0x85ebca77)) >>> 0);
}

function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const SALT_ITEM = 0x1f3a;
const SALT_PRICE = 0x2b7c;
const SALT_ACCOUNTS = 0x3d91;
const SALT_LARGE = 0x4e05;

class Weighted<T> {
  private readonly cum: number[] = [];
  private readonly total: number;
  constructor(
    private readonly values: readonly T[],
    weights: readonly number[],
  ) {
    let t = 0;
    for (const w of weights) this.cum.push((t += w));
    this.total = t;
  }
  pick(rng: Rng): T {
    const x = rng.next() * this.total;
    for (let i = 0; i < this.cum.length; i++) if (x < (this.cum[i] as number)) return this.values[i] as T;
    return this.values[this.values.length - 1] as T;
  }
}

function weighted<T>(pairs: readonly (readonly [T, number])[]): Weighted<T> {
  return new Weighted(
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  );
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const iso = (ms: number): string => new Date(Math.floor(ms)).toISOString();

// ---------------------------------------------------------------------------------------------------------
// Reference data: real platforms, their life spans, makers, media and hardware.

type Family = 'nintendo' | 'sega' | 'sony' | 'microsoft' | 'atari' | 'snk' | 'nec' | 'other';

/** [product name, model number or null where unsure, year] */
type ConsoleDef = readonly [string, string | null, number];
/** [name, model number or null, subCategory] */
type AccessoryDef = readonly [string, string | null, string];

interface PlatformDef {
  name: string;
  family: Family;
  from: number;
  to: number;
  maker: string;
  formats: readonly string[];
  weight: number;
  handheld: boolean;
  /** median loose price of a game and of a console, USD */
  px: readonly [number, number];
  /** product-code template: @ letter, # digit, {R} USA/EUR/JPN, {r} E/P/J, {S} US/ES/PS */
  code: string | null;
  suffix?: string;
  budget?: string;
  publishers?: readonly string[];
  consoles: readonly ConsoleDef[];
  accessories: readonly AccessoryDef[];
}

const PLATFORMS: readonly PlatformDef[] = [
  {
    name: 'NES', family: 'nintendo', from: 1985, to: 1994, maker: 'Nintendo', formats: ['Cartridge'], weight: 8,
    handheld: false, px: [12, 75], code: 'NES-@@-{R}',
    consoles: [
      ['NES Control Deck', 'NES-001', 1985],
      ['NES Action Set', 'NES-001', 1988],
      ['NES Top Loader', 'NES-101', 1993],
    ],
    accessories: [['Controller', 'NES-004', 'Controller'], ['Zapper', 'NES-005', 'Light Gun'],
      ['Advantage', 'NES-026', 'Controller'], ['AC Adapter', 'NES-002', 'Power Supply'],
      ['Power Pad', 'NES-028', 'Controller'], ['Four Score', 'NES-034', 'Adapter'], ['RF Switch', 'NES-003', 'Cable']],
  },
  {
    name: 'Super Nintendo', family: 'nintendo', from: 1990, to: 1998, maker: 'Nintendo', formats: ['Cartridge'],
    weight: 7, handheld: false, px: [25, 110], code: 'SNS-@@@{r}-{R}', budget: "Player's Choice",
    consoles: [['Super Nintendo Console', 'SNS-001', 1991], ['Super Nintendo Jr.', 'SNS-101', 1997]],
    accessories: [['Controller', 'SNS-005', 'Controller'], ['Super Scope', 'SNS-013', 'Light Gun'],
      ['Mouse', 'SNS-016', 'Controller'], ['AC Adapter', 'SNS-002', 'Power Supply'],
      ['Super Game Boy', 'SNS-027', 'Adapter'], ['Multitap', null, 'Adapter']],
  },
  {
    name: 'Nintendo 64', family: 'nintendo', from: 1996, to: 2002, maker: 'Nintendo', formats: ['Cartridge'],
    weight: 5, handheld: false, px: [20, 90], code: 'NUS-N@@{r}-{R}', suffix: '64', budget: "Player's Choice",
    consoles: [['Nintendo 64 Console', 'NUS-001', 1996], ['Nintendo 64 Funtastic Console', 'NUS-001', 2000]],
    accessories: [['Controller', 'NUS-005', 'Controller'], ['Controller Pak', 'NUS-004', 'Memory Card'],
      ['Rumble Pak', 'NUS-013', 'Expansion'], ['Expansion Pak', 'NUS-007', 'Expansion'],
      ['Transfer Pak', 'NUS-019', 'Adapter'], ['AC Adapter', 'NUS-002', 'Power Supply']],
  },
  {
    name: 'GameCube', family: 'nintendo', from: 2001, to: 2007, maker: 'Nintendo', formats: ['Mini DVD'], weight: 5,
    handheld: false, px: [25, 110], code: 'DOL-G@@{r}-{R}', budget: "Player's Choice",
    consoles: [['GameCube Console', 'DOL-001', 2001], ['GameCube Console', 'DOL-101', 2004]],
    accessories: [['Controller', 'DOL-003', 'Controller'], ['WaveBird Wireless Controller', 'DOL-004', 'Controller'],
      ['Memory Card 251', 'DOL-008', 'Memory Card'], ['Game Boy Player', 'DOL-017', 'Adapter'],
      ['Broadband Adapter', 'DOL-015', 'Adapter']],
  },
  {
    name: 'Wii', family: 'nintendo', from: 2006, to: 2013, maker: 'Nintendo', formats: ['DVD'], weight: 7,
    handheld: false, px: [10, 50], code: 'RVL-R@@{r}-{R}', budget: 'Nintendo Selects',
    consoles: [
      ['Wii Console', 'RVL-001', 2006],
      ['Wii Family Edition', 'RVL-101', 2011],
      ['Wii Mini', 'RVL-201', 2012],
    ],
    accessories: [['Remote', 'RVL-003', 'Controller'], ['Nunchuk', 'RVL-004', 'Controller'],
      ['Classic Controller', 'RVL-005', 'Controller'], ['Remote Plus', 'RVL-036', 'Controller'],
      ['Balance Board', 'RVL-021', 'Controller'], ['MotionPlus', 'RVL-026', 'Expansion'],
      ['Sensor Bar', 'RVL-014', 'Adapter']],
  },
  {
    name: 'Wii U', family: 'nintendo', from: 2012, to: 2017, maker: 'Nintendo', formats: ['Wii U Optical Disc'],
    weight: 3, handheld: false, px: [12, 90], code: 'WUP-P-A@@{r}', budget: 'Nintendo Selects',
    consoles: [['Wii U Basic Set (8GB)', 'WUP-101', 2012], ['Wii U Deluxe Set (32GB)', 'WUP-101', 2012]],
    accessories: [['Pro Controller', 'WUP-005', 'Controller'], ['GamePad', 'WUP-010', 'Controller'],
      ['AC Adapter', 'WUP-002', 'Power Supply']],
  },
  {
    name: 'Nintendo Switch', family: 'nintendo', from: 2017, to: 2025, maker: 'Nintendo',
    formats: ['Game Card', 'Game Card', 'Game Card', 'Game Card', 'Digital code card'], weight: 7, handheld: false,
    px: [30, 220], code: 'HAC-P-A@@@{r}',
    consoles: [
      ['Nintendo Switch Console', 'HAC-001', 2017],
      ['Nintendo Switch Console (Extended Battery)', 'HAC-001(-01)', 2019],
      ['Nintendo Switch Lite', 'HDH-001', 2019],
      ['Nintendo Switch OLED Model', 'HEG-001', 2021],
    ],
    accessories: [['Pro Controller', 'HAC-013', 'Controller'], ['Joy-Con (L)', 'HAC-015', 'Controller'],
      ['Joy-Con (R)', 'HAC-016', 'Controller'], ['Joy-Con Charging Grip', 'HAC-012', 'Power Supply'],
      ['Dock', 'HAC-007', 'Adapter'], ['AC Adapter', 'HAC-002', 'Power Supply']],
  },
  {
    name: 'Game Boy', family: 'nintendo', from: 1989, to: 2001, maker: 'Nintendo', formats: ['Cartridge'], weight: 5,
    handheld: true, px: [12, 60], code: 'DMG-@@{r}-{R}',
    consoles: [['Game Boy', 'DMG-01', 1989], ['Game Boy Pocket', 'MGB-001', 1996]],
    accessories: [['Link Cable', 'DMG-04', 'Cable'], ['Printer', 'MGB-007', 'Peripheral'],
      ['Camera', 'MGB-006', 'Peripheral']],
  },
  {
    name: 'Game Boy Color', family: 'nintendo', from: 1998, to: 2003, maker: 'Nintendo', formats: ['Cartridge'],
    weight: 3, handheld: true, px: [15, 65], code: 'CGB-B@@{r}-{R}',
    consoles: [['Game Boy Color Console', 'CGB-001', 1998]],
    accessories: [['Link Cable', 'CGB-003', 'Cable']],
  },
  {
    name: 'Game Boy Advance', family: 'nintendo', from: 2001, to: 2008, maker: 'Nintendo', formats: ['Cartridge'],
    weight: 6, handheld: true, px: [15, 60], code: 'AGB-A@@{r}-{R}', suffix: 'Advance',
    consoles: [
      ['Game Boy Advance Console', 'AGB-001', 2001],
      ['Game Boy Advance SP', 'AGS-001', 2003],
      ['Game Boy Advance SP (Backlit)', 'AGS-101', 2005],
      ['Game Boy Micro', 'OXY-001', 2005],
    ],
    accessories: [['Link Cable', 'AGB-005', 'Cable'], ['e-Reader', 'AGB-014', 'Peripheral'],
      ['Wireless Adapter', 'AGB-015', 'Adapter'], ['SP AC Adapter', 'AGS-002', 'Power Supply']],
  },
  {
    name: 'Nintendo DS', family: 'nintendo', from: 2004, to: 2014, maker: 'Nintendo', formats: ['Game Card'],
    weight: 7, handheld: true, px: [10, 45], code: 'NTR-A@@{r}-{R}', suffix: 'DS',
    consoles: [
      ['Nintendo DS', 'NTR-001', 2004],
      ['Nintendo DS Lite', 'USG-001', 2006],
      ['Nintendo DSi', 'TWL-001', 2008],
      ['Nintendo DSi XL', 'UTL-001', 2009],
    ],
    accessories: [['Stylus', 'NTR-004', 'Accessory'], ['Rumble Pak', 'NTR-008', 'Expansion'],
      ['Lite AC Adapter', 'USG-002', 'Power Supply']],
  },
  {
    name: 'Nintendo 3DS', family: 'nintendo', from: 2011, to: 2019, maker: 'Nintendo', formats: ['Game Card'],
    weight: 5, handheld: true, px: [14, 110], code: 'CTR-P-A@@{r}', suffix: '3D', budget: 'Nintendo Selects',
    consoles: [
      ['Nintendo 3DS', 'CTR-001', 2011],
      ['Nintendo 3DS XL', 'SPR-001', 2012],
      ['Nintendo 2DS', 'FTR-001', 2013],
      ['New Nintendo 3DS XL', 'RED-001', 2015],
      ['New Nintendo 2DS XL', 'JAN-001', 2017],
    ],
    accessories: [['Circle Pad Pro', 'CTR-009', 'Controller'], ['AC Adapter', 'WAP-002', 'Power Supply']],
  },
  {
    name: 'Virtual Boy', family: 'nintendo', from: 1995, to: 1996, maker: 'Nintendo', formats: ['Cartridge'],
    weight: 0.3, handheld: false, px: [40, 250], code: 'VUE-V@@{r}-{R}',
    consoles: [['Virtual Boy Console', 'VUE-001', 1995]],
    accessories: [['Controller', 'VUE-005', 'Controller']],
  },
  {
    name: 'Sega Genesis', family: 'sega', from: 1989, to: 1997, maker: 'Sega', formats: ['Cartridge'], weight: 6,
    handheld: false, px: [12, 70], code: '####',
    consoles: [['Sega Genesis Model 1', 'MK-1601', 1989], ['Sega Genesis Model 2', 'MK-1631', 1993]],
    accessories: [['Control Pad', 'MK-1650', 'Controller'], ['6 Button Arcade Pad', 'MK-1653', 'Controller'],
      ['Power Base Converter', 'MK-1690', 'Adapter'], ['AC Adapter', null, 'Power Supply']],
  },
  {
    name: 'Sega CD', family: 'sega', from: 1992, to: 1996, maker: 'Sega', formats: ['CD-ROM'], weight: 0.8,
    handheld: false, px: [25, 150], code: 'T-####',
    consoles: [['Sega CD Model 1', 'MK-4101', 1992], ['Sega CD Model 2', 'MK-4102', 1993]],
    accessories: [['Backup RAM Cartridge', null, 'Memory Card']],
  },
  {
    name: 'Sega Saturn', family: 'sega', from: 1994, to: 2000, maker: 'Sega', formats: ['CD-ROM'], weight: 2,
    handheld: false, px: [45, 150], code: 'T-#####H',
    consoles: [['Sega Saturn Console', 'MK-80000', 1995], ['Sega Saturn Console (Model 2)', 'MK-80000A', 1996]],
    accessories: [['Control Pad', null, 'Controller'], ['3D Control Pad', null, 'Controller'],
      ['Virtua Gun', null, 'Light Gun'], ['Backup Memory', null, 'Memory Card']],
  },
  {
    name: 'Dreamcast', family: 'sega', from: 1998, to: 2002, maker: 'Sega', formats: ['GD-ROM'], weight: 3,
    handheld: false, px: [20, 120], code: 'T-#####N',
    consoles: [['Dreamcast Console', 'HKT-3020', 1999]],
    accessories: [['Controller', 'HKT-7700', 'Controller'], ['Visual Memory Unit', 'HKT-7000', 'Memory Card'],
      ['Jump Pack', 'HKT-8600', 'Expansion'], ['Arcade Stick', 'HKT-7300', 'Controller'],
      ['Keyboard', null, 'Peripheral']],
  },
  {
    name: 'Master System', family: 'sega', from: 1986, to: 1993, maker: 'Sega', formats: ['Cartridge', 'Cartridge',
      'Sega Card'], weight: 1.5, handheld: false, px: [15, 70], code: '####',
    consoles: [['Master System Console', '3010', 1986], ['Master System II', null, 1990]],
    accessories: [['Control Pad', '3020', 'Controller'], ['Light Phaser', '3050', 'Light Gun'],
      ['3-D Glasses', null, 'Peripheral']],
  },
  {
    name: 'Game Gear', family: 'sega', from: 1990, to: 1997, maker: 'Sega', formats: ['Cartridge'], weight: 1.5,
    handheld: true, px: [10, 80], code: '2###',
    consoles: [['Game Gear Console', null, 1991]],
    accessories: [['TV Tuner', null, 'Adapter'], ['AC Adapter', null, 'Power Supply']],
  },
  {
    name: 'PlayStation', family: 'sony', from: 1995, to: 2004, maker: 'Sony', formats: ['CD-ROM'], weight: 8,
    handheld: false, px: [12, 60], code: 'SL{S}-0####', budget: 'Greatest Hits',
    consoles: [
      ['PlayStation Console', 'SCPH-1001', 1995],
      ['PlayStation Console', 'SCPH-5501', 1996],
      ['PlayStation Console', 'SCPH-9001', 1999],
      ['PSone', 'SCPH-101', 2000],
    ],
    accessories: [['Controller', 'SCPH-1080', 'Controller'], ['Dual Analog Controller', 'SCPH-1180', 'Controller'],
      ['DualShock Analog Controller', 'SCPH-1200', 'Controller'], ['Memory Card', 'SCPH-1020', 'Memory Card'],
      ['Multitap', 'SCPH-1070', 'Adapter'], ['Mouse', 'SCPH-1090', 'Controller']],
  },
  {
    name: 'PlayStation 2', family: 'sony', from: 2000, to: 2013, maker: 'Sony', formats: ['DVD', 'DVD', 'DVD',
      'CD-ROM'], weight: 10, handheld: false, px: [8, 70], code: 'SL{S}-2####', budget: 'Greatest Hits',
    consoles: [
      ['PlayStation 2 Console', 'SCPH-30001', 2000],
      ['PlayStation 2 Console', 'SCPH-39001', 2002],
      ['PlayStation 2 Console', 'SCPH-50001', 2003],
      ['PlayStation 2 Slim', 'SCPH-70012', 2004],
      ['PlayStation 2 Slim', 'SCPH-90001', 2007],
    ],
    accessories: [['DualShock 2 Controller', 'SCPH-10010', 'Controller'],
      ['Memory Card (8MB)', 'SCPH-10020', 'Memory Card'], ['Vertical Stand', 'SCPH-10040', 'Stand'],
      ['Network Adapter', 'SCPH-10281', 'Adapter'], ['EyeToy USB Camera', null, 'Peripheral']],
  },
  {
    name: 'PlayStation 3', family: 'sony', from: 2006, to: 2017, maker: 'Sony', formats: ['Blu-ray'], weight: 6,
    handheld: false, px: [8, 90], code: 'BL{S}-3####', budget: 'Greatest Hits',
    consoles: [
      ['PlayStation 3 Console (60GB)', 'CECHA01', 2006],
      ['PlayStation 3 Slim', 'CECH-2001A', 2009],
      ['PlayStation 3 Super Slim', 'CECH-4001B', 2012],
    ],
    accessories: [['DualShock 3 Wireless Controller', 'CECHZC2U', 'Controller'],
      ['Sixaxis Wireless Controller', 'CECHZC1U', 'Controller'],
      ['Move Motion Controller', 'CECH-ZCM1U', 'Controller'], ['Eye Camera', 'SLEH-00448', 'Peripheral']],
  },
  {
    name: 'PlayStation 4', family: 'sony', from: 2013, to: 2024, maker: 'Sony', formats: ['Blu-ray'], weight: 6,
    handheld: false, px: [12, 160], code: 'CUSA-#####', budget: 'PlayStation Hits',
    consoles: [
      ['PlayStation 4 Console', 'CUH-1001A', 2013],
      ['PlayStation 4 Slim', 'CUH-2015A', 2016],
      ['PlayStation 4 Pro', 'CUH-7015B', 2016],
    ],
    accessories: [['DualShock 4 Wireless Controller', 'CUH-ZCT1U', 'Controller'],
      ['DualShock 4 Wireless Controller (v2)', 'CUH-ZCT2U', 'Controller'], ['Camera', 'CUH-ZEY1', 'Peripheral'],
      ['VR Headset', 'CUH-ZVR1', 'Peripheral'], ['Charging Station', 'CUH-ZDC1', 'Power Supply']],
  },
  {
    name: 'PlayStation 5', family: 'sony', from: 2020, to: 2025, maker: 'Sony', formats: ['Ultra HD Blu-ray',
      'Ultra HD Blu-ray', 'Ultra HD Blu-ray', 'Digital code card'], weight: 4, handheld: false, px: [25, 380],
    code: 'PPSA-#####',
    consoles: [
      ['PlayStation 5 Console', 'CFI-1015A', 2020],
      ['PlayStation 5 Digital Edition', 'CFI-1015B', 2020],
      ['PlayStation 5 Slim', 'CFI-2015', 2023],
      ['PlayStation 5 Pro', null, 2024],
    ],
    accessories: [['DualSense Wireless Controller', 'CFI-ZCT1W', 'Controller'],
      ['DualSense Edge Wireless Controller', 'CFI-ZCP1', 'Controller'],
      ['Pulse 3D Wireless Headset', 'CFI-ZWH1', 'Audio'], ['HD Camera', 'CFI-ZEY1', 'Peripheral'],
      ['DualSense Charging Station', 'CFI-ZDS1', 'Power Supply']],
  },
  {
    name: 'PSP', family: 'sony', from: 2005, to: 2014, maker: 'Sony', formats: ['UMD'], weight: 4, handheld: true,
    px: [10, 70], code: 'UL{S}-#####', suffix: 'Portable', budget: 'Greatest Hits',
    consoles: [
      ['PSP-1000', 'PSP-1001', 2005],
      ['PSP-2000 Slim & Lite', 'PSP-2001', 2007],
      ['PSP-3000', 'PSP-3001', 2008],
      ['PSP Go', 'PSPN-1001', 2009],
      ['PSP Street', 'PSP-E1004', 2011],
    ],
    accessories: [['Battery Pack', 'PSP-110', 'Power Supply'], ['Go!Cam', 'PSP-450', 'Peripheral'],
      ['AC Adapter', null, 'Power Supply']],
  },
  {
    name: 'PS Vita', family: 'sony', from: 2012, to: 2019, maker: 'Sony', formats: ['PS Vita Card'], weight: 1.5,
    handheld: true, px: [20, 150], code: 'PCSE-00###',
    consoles: [
      ['PS Vita Wi-Fi', 'PCH-1001', 2012],
      ['PS Vita 3G/Wi-Fi', 'PCH-1101', 2012],
      ['PS Vita Slim', 'PCH-2001', 2014],
    ],
    accessories: [['Memory Card', null, 'Memory Card'], ['PlayStation TV', 'VTE-1001', 'Adapter']],
  },
  {
    name: 'Xbox', family: 'microsoft', from: 2001, to: 2008, maker: 'Microsoft', formats: ['DVD'], weight: 4,
    handheld: false, px: [8, 70], code: null, budget: 'Platinum Hits',
    consoles: [['Xbox Console', null, 2001], ['Xbox Crystal Edition', null, 2003]],
    accessories: [['Controller S', null, 'Controller'], ['Live Starter Kit', null, 'Audio'],
      ['DVD Movie Playback Kit', null, 'Peripheral'], ['Memory Unit', null, 'Memory Card']],
  },
  {
    name: 'Xbox 360', family: 'microsoft', from: 2005, to: 2016, maker: 'Microsoft', formats: ['DVD'], weight: 6,
    handheld: false, px: [7, 60], code: null, budget: 'Platinum Hits',
    consoles: [
      ['Xbox 360 Pro', null, 2005],
      ['Xbox 360 Arcade', null, 2007],
      ['Xbox 360 Elite', null, 2007],
      ['Xbox 360 S', '1439', 2010],
      ['Xbox 360 E', '1538', 2013],
    ],
    accessories: [['Wireless Controller', '1403', 'Controller'], ['Kinect Sensor', '1414', 'Peripheral'],
      ['Play & Charge Kit', null, 'Power Supply'], ['Wireless Network Adapter', null, 'Adapter']],
  },
  {
    name: 'Xbox One', family: 'microsoft', from: 2013, to: 2021, maker: 'Microsoft', formats: ['Blu-ray', 'Blu-ray',
      'Blu-ray', 'Digital code card'], weight: 4, handheld: false, px: [8, 120], code: null,
    consoles: [['Xbox One Console', '1540', 2013], ['Xbox One S', '1681', 2016], ['Xbox One X', '1787', 2017]],
    accessories: [['Wireless Controller', '1537', 'Controller'], ['Wireless Controller', '1708', 'Controller'],
      ['Elite Wireless Controller', '1698', 'Controller'], ['Kinect', '1520', 'Peripheral']],
  },
  {
    name: 'Xbox Series X', family: 'microsoft', from: 2020, to: 2025, maker: 'Microsoft', formats: [
      'Ultra HD Blu-ray', 'Ultra HD Blu-ray', 'Digital code card'], weight: 2.5, handheld: false, px: [25, 380],
    code: null,
    consoles: [['Xbox Series X Console', '1882', 2020]],
    accessories: [['Wireless Controller', '1914', 'Controller'], ['Elite Wireless Controller Series 2', '1797',
      'Controller'], ['Storage Expansion Card', null, 'Memory Card']],
  },
  {
    name: 'Atari 2600', family: 'atari', from: 1977, to: 1992, maker: 'Atari', formats: ['Cartridge'], weight: 3,
    handheld: false, px: [5, 60], code: 'CX26##',
    publishers: ['Atari', 'Activision', 'Imagic', 'Parker Brothers', 'Coleco', 'Mattel Electronics', 'Sega',
      'Data Age', 'Spectravision', 'US Games', 'Absolute Entertainment', 'Tigervision'],
    consoles: [
      ['Atari 2600 Heavy Sixer', 'CX2600', 1977],
      ['Atari 2600 Light Sixer', 'CX2600', 1978],
      ['Atari 2600 Four-Switch', 'CX2600A', 1980],
      ['Atari 2600 Jr.', 'CX2600A', 1986],
    ],
    accessories: [['Joystick', 'CX40', 'Controller'], ['Paddle Controllers', 'CX30', 'Controller'],
      ['Keyboard Controllers', 'CX50', 'Controller']],
  },
  {
    name: 'Atari 7800', family: 'atari', from: 1986, to: 1991, maker: 'Atari', formats: ['Cartridge'], weight: 0.6,
    handheld: false, px: [8, 80], code: 'CX78##',
    publishers: ['Atari', 'Absolute Entertainment', 'Activision', 'Froggo'],
    consoles: [['Atari 7800 ProSystem', 'CX7800', 1986]],
    accessories: [['ProLine Joystick', 'CX24', 'Controller']],
  },
  {
    name: 'Atari Jaguar', family: 'atari', from: 1993, to: 1996, maker: 'Atari', formats: ['Cartridge'], weight: 0.5,
    handheld: false, px: [30, 160], code: null,
    publishers: ['Atari', 'Telegames', 'Ubisoft', 'Time Warner Interactive', 'Interplay'],
    consoles: [['Atari Jaguar Console', null, 1993]],
    accessories: [['Controller', null, 'Controller'], ['Pro Controller', null, 'Controller']],
  },
  {
    name: 'Neo Geo', family: 'snk', from: 1990, to: 2004, maker: 'SNK', formats: ['Cartridge'], weight: 0.8,
    handheld: false, px: [250, 500], code: 'NGH-0##',
    publishers: ['SNK', 'ADK', 'Data East', 'Visco', 'Saurus', 'Sunsoft', 'Technōs Japan', 'Video System'],
    consoles: [['Neo Geo AES Console', null, 1990]],
    accessories: [['Joystick Controller', null, 'Controller'], ['Memory Card', null, 'Memory Card']],
  },
  {
    name: 'TurboGrafx-16', family: 'nec', from: 1989, to: 1994, maker: 'NEC', formats: ['TurboChip', 'TurboChip',
      'CD-ROM'], weight: 1, handheld: false, px: [35, 140], code: 'TGX0#0###',
    publishers: ['NEC', 'Hudson Soft', 'Working Designs', 'Irem', 'Namco', 'Taito', 'Turbo Technologies'],
    consoles: [['TurboGrafx-16 Console', null, 1989], ['TurboDuo', null, 1992]],
    accessories: [['TurboPad', null, 'Controller'], ['TurboTap', null, 'Adapter'], ['TurboStick', null, 'Controller']],
  },
  {
    name: 'ColecoVision', family: 'other', from: 1982, to: 1985, maker: 'Coleco', formats: ['Cartridge'], weight: 0.5,
    handheld: false, px: [10, 120], code: null,
    publishers: ['Coleco', 'Parker Brothers', 'Activision', 'Sega', 'Imagic', 'Epyx'],
    consoles: [['ColecoVision Console', null, 1982]],
    accessories: [['Controller', null, 'Controller'], ['Expansion Module #2 Driving Controller', null, 'Controller']],
  },
  {
    name: 'Intellivision', family: 'other', from: 1979, to: 1990, maker: 'Mattel Electronics', formats: ['Cartridge'],
    weight: 0.6, handheld: false, px: [5, 70], code: null,
    publishers: ['Mattel Electronics', 'INTV Corporation', 'Activision', 'Imagic', 'Parker Brothers', 'Coleco'],
    consoles: [['Intellivision Console', null, 1979], ['Intellivision II', null, 1983]],
    accessories: [['Intellivoice', null, 'Peripheral']],
  },
  {
    name: '3DO', family: 'other', from: 1993, to: 1996, maker: 'Panasonic', formats: ['CD-ROM'], weight: 0.5,
    handheld: false, px: [20, 160], code: null,
    publishers: ['The 3DO Company', 'Crystal Dynamics', 'Electronic Arts', 'Panasonic', 'Interplay'],
    consoles: [
      ['Panasonic 3DO FZ-1 R.E.A.L. Interactive Multiplayer', 'FZ-1', 1993],
      ['Panasonic 3DO FZ-10 R.E.A.L. Interactive Multiplayer', 'FZ-10', 1994],
    ],
    accessories: [['Control Pad', null, 'Controller']],
  },
];

/** Each platform's real release span, as used for releaseYear (before clamping to `now`). */
export const DEMO_PLATFORM_YEARS: Readonly<Record<string, readonly [number, number]>> = Object.freeze(
  Object.fromEntries(PLATFORMS.map((p) => [p.name, [p.from, p.to] as const])),
);

interface Era {
  until: number;
  publishers: readonly string[];
  developers: readonly string[];
}

const ERAS: readonly Era[] = [
  {
    until: 1984,
    publishers: ['Atari', 'Activision', 'Imagic', 'Parker Brothers', 'Coleco', 'Mattel Electronics', 'Sega', 'Namco'],
    developers: ['Atari', 'Activision', 'Imagic', 'Parker Brothers', 'Coleco', 'Nintendo R&D1'],
  },
  {
    until: 1990,
    publishers: ['Nintendo', 'Capcom', 'Konami', 'Namco', 'Hudson Soft', 'Taito', 'Tecmo', 'Square', 'Enix',
      'Sunsoft', 'Jaleco', 'Data East', 'Irem', 'Acclaim', 'LJN', 'Kemco', 'Bandai', 'Sega', 'Activision',
      'Electronic Arts'],
    developers: ['Nintendo R&D1', 'Nintendo EAD', 'Intelligent Systems', 'HAL Laboratory', 'Rare', 'Compile',
      'Technōs Japan', 'Natsume', 'Chunsoft', 'Sunsoft', 'Capcom', 'Konami', 'Tecmo', 'Hudson Soft', 'Irem',
      'Westone', 'Sega AM2', 'Square'],
  },
  {
    until: 1995,
    publishers: ['Nintendo', 'Sega', 'Capcom', 'Konami', 'Square', 'Enix', 'Hudson Soft', 'Namco', 'Taito',
      'Electronic Arts', 'Acclaim', 'Working Designs', 'SNK', 'Koei', 'Sunsoft', 'Data East', 'Natsume', 'Atlus',
      'Ocean', 'Virgin Interactive', 'Interplay'],
    developers: ['Nintendo EAD', 'Rare', 'Intelligent Systems', 'HAL Laboratory', 'Treasure', 'Sonic Team',
      'Sega AM2', 'Quintet', 'Technōs Japan', 'Game Freak', 'Factor 5', 'Shiny Entertainment',
      'Blizzard Entertainment', 'Climax Entertainment', 'Konami', 'Capcom', 'Square', 'Chunsoft', 'Westone',
      'Sega AM3', 'Ancient'],
  },
  {
    until: 2000,
    publishers: ['Sony Computer Entertainment', 'Nintendo', 'Sega', 'Square', 'Capcom', 'Konami', 'Namco',
      'Eidos Interactive', 'Activision', 'Electronic Arts', 'THQ', 'Midway', 'Atlus', 'Working Designs',
      'Infogrames', 'Ubisoft', 'Koei', 'Enix', 'Acclaim', 'Crave Entertainment', 'Hudson Soft', 'Psygnosis'],
    developers: ['Rare', 'Naughty Dog', 'Insomniac Games', 'Polyphony Digital', 'Core Design', 'Neversoft',
      'Treasure', 'Sonic Team', 'Square', 'Konami Computer Entertainment Japan', 'Capcom Production Studio 4',
      'HAL Laboratory', 'Nintendo EAD', 'Factor 5', 'Iguana Entertainment', 'Paradigm Entertainment',
      'Westwood Studios', 'Bizarre Creations', "Traveller's Tales", 'Camelot Software Planning', 'Game Freak',
      'Team Silent', 'Hudson Soft'],
  },
  {
    until: 2006,
    publishers: ['Electronic Arts', 'Activision', 'Ubisoft', 'THQ', 'Take-Two Interactive', 'Rockstar Games', 'Sega',
      'Capcom', 'Konami', 'Namco', 'Square Enix', 'Atlus', 'Nintendo', 'Sony Computer Entertainment',
      'Microsoft Game Studios', 'Eidos Interactive', 'Midway', 'Bandai', 'Tecmo', 'Koei', 'Majesco', 'NIS America',
      'Vivendi Universal Games', 'Atari'],
    developers: ['Retro Studios', 'Nintendo EAD', 'Intelligent Systems', 'Bungie', 'BioWare', 'Naughty Dog',
      'Insomniac Games', 'Sucker Punch Productions', 'Team Ico', 'Clover Studio', 'Team Ninja', 'Neversoft',
      'Treyarch', 'Rockstar North', 'Ubisoft Montreal', 'Criterion Games', 'Polyphony Digital', 'Level-5',
      'Monolith Soft', 'Vicarious Visions', "Traveller's Tales", 'Eurocom', 'Grasshopper Manufacture', 'Cing',
      'Kojima Productions', 'Sonic Team', 'Amusement Vision', 'Nippon Ichi Software', 'Gust', 'Climax Studios',
      'Pandemic Studios', 'Free Radical Design'],
  },
  {
    until: 2012,
    publishers: ['Electronic Arts', 'Activision', 'Ubisoft', 'Square Enix', 'Namco Bandai Games', 'Capcom', 'Konami',
      'Sega', 'Bethesda Softworks', '2K Games', 'Atlus', 'Nintendo', 'Sony Computer Entertainment',
      'Microsoft Game Studios', 'THQ', 'Warner Bros. Interactive', 'NIS America', 'Tecmo Koei', 'Xseed Games',
      'Aksys Games', 'Majesco', 'Natsume'],
    developers: ['Retro Studios', 'Nintendo EAD', 'Monolith Soft', 'PlatinumGames', 'FromSoftware', 'Naughty Dog',
      'Insomniac Games', 'Bungie', 'BioWare', 'Bethesda Game Studios', 'Infinity Ward', 'Treyarch',
      'Rocksteady Studios', 'Media Molecule', 'Sucker Punch Productions', 'Good-Feel', 'Next Level Games', 'Level-5',
      'Vanillaware', 'Arc System Works', 'Nippon Ichi Software', 'Team Ninja', 'Ubisoft Montreal',
      'Criterion Games', 'Epic Games', 'Irrational Games', 'Visceral Games', 'Double Fine Productions',
      'WayForward', 'Grasshopper Manufacture', 'Cavia', 'tri-Ace', 'Game Freak', 'Intelligent Systems',
      'HAL Laboratory'],
  },
  {
    until: 9999,
    publishers: ['Nintendo', 'Sony Interactive Entertainment', 'Xbox Game Studios', 'Electronic Arts', 'Activision',
      'Ubisoft', 'Square Enix', 'Bandai Namco', 'Capcom', 'Sega', 'Atlus', 'Bethesda Softworks', '2K',
      'Devolver Digital', 'Annapurna Interactive', 'Koei Tecmo', 'NIS America', 'Limited Run Games',
      'Warner Bros. Games', 'Xseed Games', 'Marvelous', 'Team17', 'Focus Entertainment', 'Humble Games'],
    developers: ['Nintendo EPD', 'Retro Studios', 'Monolith Soft', 'Next Level Games', 'PlatinumGames',
      'FromSoftware', 'Naughty Dog', 'Insomniac Games', 'Santa Monica Studio', 'Guerrilla Games',
      'Sucker Punch Productions', 'Bluepoint Games', 'Playground Games', '343 Industries', 'The Coalition',
      'Ryu Ga Gotoku Studio', 'Atlus', 'Vanillaware', 'Arc System Works', 'Supergiant Games', 'Motion Twin',
      'Team Cherry', 'ConcernedApe', 'Mossmouth', 'Yacht Club Games', 'WayForward', 'Game Freak',
      'Intelligent Systems', 'HAL Laboratory', 'Omega Force', 'Grezzo', 'Good-Feel', 'Spike Chunsoft',
      'Arkane Studios', 'MachineGames', 'Ubisoft Montpellier', 'Dotemu', 'Lizardcube'],
  },
];

/**
 * Publishers and studios that only ever worked for one platform family (Sega went multi-platform in 2001);
 * keeping them off other families avoids "Naughty Dog" on a Switch game.
 */
const OWNER: Readonly<Record<string, Family>> = {
  Nintendo: 'nintendo', 'Nintendo R&D1': 'nintendo', 'Nintendo EAD': 'nintendo', 'Nintendo EPD': 'nintendo',
  'Intelligent Systems': 'nintendo', 'HAL Laboratory': 'nintendo', 'Retro Studios': 'nintendo',
  'Monolith Soft': 'nintendo', 'Next Level Games': 'nintendo', 'Game Freak': 'nintendo', Grezzo: 'nintendo',
  'Good-Feel': 'nintendo', 'Camelot Software Planning': 'nintendo',
  'Sony Computer Entertainment': 'sony', 'Sony Interactive Entertainment': 'sony', 'Naughty Dog': 'sony',
  'Insomniac Games': 'sony', 'Polyphony Digital': 'sony', 'Sucker Punch Productions': 'sony', 'Team Ico': 'sony',
  'Media Molecule': 'sony', 'Santa Monica Studio': 'sony', 'Guerrilla Games': 'sony', 'Bluepoint Games': 'sony',
  'Microsoft Game Studios': 'microsoft', 'Xbox Game Studios': 'microsoft', Bungie: 'microsoft',
  'Playground Games': 'microsoft', '343 Industries': 'microsoft', 'The Coalition': 'microsoft',
  Sega: 'sega', 'Sonic Team': 'sega', 'Sega AM2': 'sega', 'Sega AM3': 'sega', 'Amusement Vision': 'sega',
};
const SEGA_MULTIPLATFORM_ERA = 4;

function allowedOn(name: string, family: Family, era: number): boolean {
  const owner = OWNER[name];
  return owner === undefined || owner === family || (owner === 'sega' && era >= SEGA_MULTIPLATFORM_ERA);
}

/** Publishers renamed over time; applied so a 2010 game is not "Square" nor a 1998 one "Square Enix". */
function publisherInYear(name: string, year: number): string {
  switch (name) {
    case 'Square':
    case 'Enix':
    case 'Square Enix':
      return year >= 2003 ? 'Square Enix' : name === 'Square Enix' ? 'Square' : name;
    case 'Namco':
    case 'Namco Bandai Games':
    case 'Bandai Namco':
      return year < 2006 ? 'Namco' : year < 2015 ? 'Namco Bandai Games' : 'Bandai Namco';
    case 'Sony Computer Entertainment':
    case 'Sony Interactive Entertainment':
      return year < 2016 ? 'Sony Computer Entertainment' : 'Sony Interactive Entertainment';
    case 'Microsoft':
    case 'Microsoft Game Studios':
    case 'Microsoft Studios':
    case 'Xbox Game Studios':
      return year < 2002 ? 'Microsoft' : year < 2012 ? 'Microsoft Game Studios' : year < 2019 ? 'Microsoft Studios'
        : 'Xbox Game Studios';
    case 'Tecmo':
    case 'Koei':
    case 'Tecmo Koei':
    case 'Koei Tecmo':
      return year < 2010 ? (name === 'Koei' ? 'Koei' : 'Tecmo') : year < 2014 ? 'Tecmo Koei' : 'Koei Tecmo';
    case 'Hudson Soft':
      return year >= 2012 ? 'Konami' : name;
    case 'THQ':
      return year >= 2013 ? 'THQ Nordic' : name;
    case 'Midway':
      return year >= 2010 ? 'Warner Bros. Interactive' : name;
    case 'Eidos Interactive':
      return year >= 2010 ? 'Square Enix' : name;
    case 'Warner Bros. Interactive':
    case 'Warner Bros. Games':
      return year >= 2019 ? 'Warner Bros. Games' : 'Warner Bros. Interactive';
    default:
      return name;
  }
}

const FIRST_PARTY: Readonly<Record<Family, string | null>> = {
  nintendo: 'Nintendo',
  sega: 'Sega',
  sony: 'Sony Computer Entertainment',
  microsoft: 'Microsoft',
  atari: 'Atari',
  snk: 'SNK',
  nec: 'NEC',
  other: null,
};

/** [name, publisher, family it is tied to (null: multi-platform), first year, genre] */
type Franchise = readonly [string, string, Family | null, number, string];

const FRANCHISES: readonly Franchise[] = [
  ['Super Mario', 'Nintendo', 'nintendo', 1985, 'Platformer'],
  ['The Legend of Zelda', 'Nintendo', 'nintendo', 1986, 'Action Adventure'],
  ['Metroid', 'Nintendo', 'nintendo', 1986, 'Metroidvania'],
  ['Kirby', 'Nintendo', 'nintendo', 1992, 'Platformer'],
  ['Donkey Kong', 'Nintendo', 'nintendo', 1981, 'Platformer'],
  ['Star Fox', 'Nintendo', 'nintendo', 1993, 'Shooter'],
  ['F-Zero', 'Nintendo', 'nintendo', 1990, 'Racing'],
  ['Fire Emblem', 'Nintendo', 'nintendo', 1990, 'Tactical RPG'],
  ['Pokémon', 'Nintendo', 'nintendo', 1996, 'RPG'],
  ['Mario Kart', 'Nintendo', 'nintendo', 1992, 'Racing'],
  ['Animal Crossing', 'Nintendo', 'nintendo', 2001, 'Simulation'],
  ['Pikmin', 'Nintendo', 'nintendo', 2001, 'Strategy'],
  ['Yoshi', 'Nintendo', 'nintendo', 1991, 'Platformer'],
  ['Wario', 'Nintendo', 'nintendo', 1994, 'Platformer'],
  ['Sonic the Hedgehog', 'Sega', 'sega', 1991, 'Platformer'],
  ['Phantasy Star', 'Sega', 'sega', 1987, 'RPG'],
  ['Streets of Rage', 'Sega', 'sega', 1991, "Beat 'em up"],
  ['Golden Axe', 'Sega', 'sega', 1989, "Beat 'em up"],
  ['Shinobi', 'Sega', 'sega', 1987, 'Action'],
  ['Panzer Dragoon', 'Sega', 'sega', 1995, 'Shooter'],
  ['Virtua Fighter', 'Sega', 'sega', 1993, 'Fighting'],
  ['Alex Kidd', 'Sega', 'sega', 1986, 'Platformer'],
  ['Jet Set Radio', 'Sega', 'sega', 2000, 'Action'],
  ['Crash Bandicoot', 'Sony Computer Entertainment', 'sony', 1996, 'Platformer'],
  ['Spyro', 'Sony Computer Entertainment', 'sony', 1998, 'Platformer'],
  ['Gran Turismo', 'Sony Computer Entertainment', 'sony', 1997, 'Racing'],
  ['Ratchet & Clank', 'Sony Computer Entertainment', 'sony', 2002, 'Action'],
  ['Jak and Daxter', 'Sony Computer Entertainment', 'sony', 2001, 'Platformer'],
  ['Uncharted', 'Sony Computer Entertainment', 'sony', 2007, 'Action Adventure'],
  ['God of War', 'Sony Computer Entertainment', 'sony', 2005, 'Action'],
  ['Ape Escape', 'Sony Computer Entertainment', 'sony', 1999, 'Platformer'],
  ['Twisted Metal', 'Sony Computer Entertainment', 'sony', 1995, 'Vehicular Combat'],
  ['Halo', 'Microsoft', 'microsoft', 2001, 'First-Person Shooter'],
  ['Gears of War', 'Microsoft', 'microsoft', 2006, 'Shooter'],
  ['Forza Motorsport', 'Microsoft', 'microsoft', 2005, 'Racing'],
  ['Fable', 'Microsoft', 'microsoft', 2004, 'Action RPG'],
  ['Mega Man', 'Capcom', null, 1987, 'Platformer'],
  ['Street Fighter', 'Capcom', null, 1987, 'Fighting'],
  ['Resident Evil', 'Capcom', null, 1996, 'Survival Horror'],
  ['Monster Hunter', 'Capcom', null, 2004, 'Action RPG'],
  ['Ōkami', 'Capcom', null, 2006, 'Action Adventure'],
  ['Castlevania', 'Konami', null, 1986, 'Action'],
  ['Contra', 'Konami', null, 1987, 'Shooter'],
  ['Metal Gear', 'Konami', null, 1987, 'Stealth'],
  ['Silent Hill', 'Konami', null, 1999, 'Survival Horror'],
  ['Gradius', 'Konami', null, 1985, "Shoot 'em up"],
  ['Final Fantasy', 'Square', null, 1987, 'RPG'],
  ['Dragon Quest', 'Enix', null, 1986, 'RPG'],
  ['Tales of', 'Namco', null, 1995, 'RPG'],
  ['Tekken', 'Namco', null, 1994, 'Fighting'],
  ['Ridge Racer', 'Namco', null, 1993, 'Racing'],
  ['Ace Combat', 'Namco', null, 1995, 'Flight'],
  ['Katamari', 'Namco', null, 2004, 'Puzzle'],
  ['Pac-Man', 'Namco', null, 1980, 'Maze'],
  ['Persona', 'Atlus', null, 1996, 'RPG'],
  ['Shin Megami Tensei', 'Atlus', null, 1992, 'RPG'],
  ['Bomberman', 'Hudson Soft', null, 1985, 'Action'],
  ['Adventure Island', 'Hudson Soft', null, 1986, 'Platformer'],
  ['Bonk', 'Hudson Soft', null, 1989, 'Platformer'],
  ['Ninja Gaiden', 'Tecmo', null, 1988, 'Action'],
  ["Tony Hawk's Pro Skater", 'Activision', null, 1999, 'Sports'],
  ['Madden NFL', 'Electronic Arts', null, 1988, 'Sports'],
  ['FIFA', 'Electronic Arts', null, 1993, 'Sports'],
  ['Need for Speed', 'Electronic Arts', null, 1994, 'Racing'],
  ['Mortal Kombat', 'Midway', null, 1992, 'Fighting'],
  ['Rayman', 'Ubisoft', null, 1995, 'Platformer'],
  ["Assassin's Creed", 'Ubisoft', null, 2007, 'Action Adventure'],
  ['Tomb Raider', 'Eidos Interactive', null, 1996, 'Action Adventure'],
  ['Metal Slug', 'SNK', null, 1996, 'Run and gun'],
  ['The King of Fighters', 'SNK', null, 1994, 'Fighting'],
  ['Samurai Shodown', 'SNK', null, 1993, 'Fighting'],
  ['R-Type', 'Irem', null, 1987, "Shoot 'em up"],
  ['Bubble Bobble', 'Taito', null, 1986, 'Platformer'],
  ['Harvest Moon', 'Natsume', null, 1996, 'Simulation'],
  ['Disgaea', 'NIS America', null, 2003, 'Tactical RPG'],
  ['Dynasty Warriors', 'Koei', null, 1997, 'Action'],
];

const GENRES = weighted<string>([
  ['Action', 10], ['Platformer', 10], ['RPG', 8], ['Action RPG', 5], ['Adventure', 6], ['Sports', 9],
  ['Racing', 7], ['Fighting', 5], ['Shooter', 5], ['First-Person Shooter', 4], ["Shoot 'em up", 3],
  ["Beat 'em up", 3], ['Puzzle', 6], ['Strategy', 3], ['Tactical RPG', 2], ['Simulation', 3],
  ['Survival Horror', 2], ['Party', 2], ['Rhythm', 2], ['Stealth', 1], ['Metroidvania', 1], ['Visual Novel', 1],
  ['Pinball', 1], ['Educational', 1],
]);

const ADJECTIVES = ['Crimson', 'Silent', 'Iron', 'Eternal', 'Phantom', 'Golden', 'Shadow', 'Neon', 'Cosmic',
  'Savage', 'Lunar', 'Wild', 'Frozen', 'Burning', 'Hidden', 'Lost', 'Mystic', 'Radiant', 'Steel', 'Thunder',
  'Star', 'Dark', 'Twin', 'Ancient', 'Sacred', 'Broken', 'Velvet', 'Electric', 'Solar', 'Arcane', 'Royal', 'Rogue',
  'Midnight', 'Scarlet', 'Emerald', 'Sapphire', 'Ruby', 'Crystal', 'Chrono', 'Galactic', 'Pixel', 'Atomic',
  'Blazing', 'Hollow', 'Infinite', 'Wicked', 'Brave', 'Little', 'Grand', 'Cyber', 'Jungle', 'Desert', 'Über'];

const NOUNS = ['Blade', 'Knight', 'Saga', 'Drift', 'Quest', 'Frontier', 'Dynasty', 'Horizon', 'Legion', 'Odyssey',
  'Rebellion', 'Garden', 'Empire', 'Rally', 'Warrior', 'Hunter', 'Force', 'Squadron', 'Strike', 'Fury', 'Heart',
  'Tales', 'Kingdom', 'Tower', 'Labyrinth', 'Dungeon', 'Island', 'Academy', 'Circuit', 'Racer', 'Brawl',
  'Showdown', 'Raider', 'Commando', 'Pilot', 'Ranger', 'Wizard', 'Dragon', 'Phoenix', 'Golem', 'Ronin', 'Striker',
  'Crusade', 'Siege', 'Voyage', 'Arena', 'Patrol', 'Machine', 'Café', 'Piñata', 'Jalapeño', 'Fiesta'];

const SUBTITLES = ['Crystal Legends', 'Shadow of the Moon', 'The Lost Kingdom', 'Café Chaos',
  "Señor Sombrero's Revenge", 'Dawn of Heroes', 'Echoes of Time', 'The Forgotten Tower', 'Über Edition',
  'Into the Abyss', 'Twilight Requiem', 'The Last Frontier', 'Ghosts of the Past', 'Gold Edition',
  "Director's Cut", 'Tournament Edition', 'Night of the Piñatas', 'Return of the King', 'Rise of the Machines',
  'Mañana Never Comes', 'Curse of the Pharaoh', 'Battle for the Stars', 'Déjà Vu', 'The Frozen Throne',
  'Operation Thunderbolt', 'Revenge of the Ninja', 'Legacy', 'Reborn', 'Awakening', 'Origins'];

const PREFIXES = weighted<string>([['Super', 6], ['Mega', 2], ['Ultra', 1], ['New', 2], ['Neo', 1], ['Hyper', 1],
  ['Über', 1], ['Turbo', 1], ['Ultimate', 1]]);

const NUMERALS = ['II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', '2', '3', '4', 'Zero', 'X'];

const FRANCHISE_SUFFIXES = ['Legends', 'Chronicles', 'Tactics', 'Party', 'Racing', 'Origins', 'Gaiden',
  'Adventures', 'Arena', 'World', 'Land', 'Remix', 'Deluxe', 'HD', 'Remastered', 'Championship Edition',
  'Collection', 'Mystery Dungeon', 'Puzzle League', 'Golf', 'Tennis', 'Stadium', 'All-Stars'];

const ACCENT_TITLES: readonly ((r: Rng) => string)[] = [
  (r) => `Café ${r.pick(NOUNS)}`,
  (r) => `Señor ${r.pick(NOUNS)}: ${r.pick(SUBTITLES)}`,
  (r) => `Über ${r.pick(NOUNS)} ${r.pick(NUMERALS)}`,
  (r) => `${r.pick(ADJECTIVES)} Piñata ${r.pick(NOUNS)}`,
  (r) => `Déjà Vu: ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`,
  (r) => `Fútbol ${r.pick(['Mundial', 'Estrella', 'Fiesta'])} ${r.intBetween(94, 99)}`,
];

/** Titles exercising CSV quoting and LIKE escaping: , " % _ and backslash. */
const SPECIAL_TITLES: Readonly<Record<'percent' | 'underscore' | 'comma' | 'quote' | 'backslash' | 'mixed',
  (r: Rng) => string>> = {
  percent: (r) => r.pick([`100% ${r.pick(NOUNS)} Juice`, `${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}: 200% Turbo`,
    `99% ${r.pick(ADJECTIVES)}`]),
  underscore: (r) => r.pick([`${r.pick(NOUNS)}_${r.pick(NOUNS)}`, `SYSTEM_${r.pick(NOUNS).toUpperCase()}`,
    `Code_${r.pick(ADJECTIVES)}`]),
  comma: (r) => r.pick([`Hey You, ${r.pick(NOUNS)}!`, `Rock, Paper, ${r.pick(NOUNS)}`,
    `${r.pick(ADJECTIVES)}, ${r.pick(ADJECTIVES)} ${r.pick(NOUNS)}`]),
  quote: (r) => r.pick([`The "${r.pick(ADJECTIVES)}" ${r.pick(NOUNS)}`, `${r.pick(NOUNS)} "${r.pick(NOUNS)}" Edition`,
    `"${r.pick(ADJECTIVES)}" ${r.pick(NOUNS)} ${r.pick(NUMERALS)}`]),
  backslash: (r) => `${r.pick(NOUNS)}\\${r.pick(NOUNS)}`,
  mixed: (r) => `"Hey, ${r.pick(NOUNS)}!" 100% ${r.pick(NOUNS)}_Edition`,
};
type SpecialKind = keyof typeof SPECIAL_TITLES;
const SPECIAL_KINDS = Object.keys(SPECIAL_TITLES) as SpecialKind[];

const GAME_BLURBS = ['A cult classic, hard to find complete.', 'Supports up to 4 players.',
  'Features 2-player co-op.', 'Widely considered one of the best games of its generation.',
  'Battery-backed save; original batteries may need replacing.', 'Known for its "impossible" final boss.',
  'Short print run; sealed copies are scarce.', 'Includes a fold-out map and registration card when complete.',
  'Ported from the arcade, with extra stages.', 'Localized with a new script and rebalanced difficulty.',
  'A launch title.', 'Late release in the system\'s life, produced in small numbers.'];

const CONSOLE_COLOURS = ['Black', 'White', 'Charcoal Grey', 'Atomic Purple', 'Jungle Green', 'Ice Blue',
  'Crimson Red', 'Midnight Blue', 'Silver', 'Platinum', 'Crystal', 'Glacier White', 'Cobalt Blue', 'Coral'];

/** [brand, first year it made game accessories, model prefix] */
const ACCESSORY_BRANDS: readonly (readonly [string, number, string])[] = [
  ['Mad Catz', 1989, 'MCZ-'], ['Hori', 1983, 'HP-'], ['PDP', 2000, 'PDP-'], ['Nyko', 1996, 'NK'],
  ['InterAct', 1994, 'SV-'], ['Performance', 1990, 'P-'], ['Pelican', 1994, 'PL-'], ['Datel', 1983, 'DT'],
  ['Logitech', 1981, 'LG-'], ['Naki', 1990, 'NA-'], ['Intec', 1995, 'G'], ['PowerA', 2008, 'PA-'],
  ['Hyperkin', 2008, 'M0'], ['8BitDo', 2013, '8BD-'], ['Mayflash', 2005, 'MF'], ['Turtle Beach', 2005, 'TBS-'],
  ['Retro-Bit', 2011, 'RB-'],
];

/** [kind, subCategory] */
const HOME_KINDS: readonly (readonly [string, string])[] = [['Controller', 'Controller'], ['Controller', 'Controller'],
  ['Arcade Stick', 'Controller'], ['AV Cable', 'Cable'], ['AC Adapter', 'Power Supply'], ['Memory Card', 'Memory Card'],
  ['Carrying Case', 'Case'], ['Steering Wheel', 'Controller'], ['Light Gun', 'Light Gun'],
  ['Extension Cable', 'Cable']];
const HANDHELD_KINDS: readonly (readonly [string, string])[] = [['Carrying Case', 'Case'], ['Link Cable', 'Cable'],
  ['AC Adapter', 'Power Supply'], ['Battery Pack', 'Power Supply'], ['Screen Magnifier', 'Accessory'],
  ['Car Adapter', 'Power Supply']];

const REGIONS = ['NTSC-U', 'PAL', 'NTSC-J'] as const;
const REGION_PICK = new Weighted<number>([0, 1, 2], [60, 25, 15]);
const REGION_CODE = ['USA', 'EUR', 'JPN'];
const REGION_LETTER = ['E', 'P', 'J'];
const SONY_REGION = ['US', 'ES', 'PS'];

// ---------------------------------------------------------------------------------------------------------
// Slugs: a char loop with a small fold table; regexes per row would dominate a million-row run.

const FOLD: Readonly<Record<string, string>> = (() => {
  const table: Record<string, string> = {};
  const groups: [string, string][] = [['àáâãäåāă', 'a'], ['çćč', 'c'], ['èéêëēė', 'e'], ['ìíîïī', 'i'],
    ['ñń', 'n'], ['òóôõöøō', 'o'], ['ùúûüū', 'u'], ['ýÿ', 'y'], ['ß', 'ss'], ['æ', 'ae'], ['œ', 'oe'], ['šś', 's'],
    ['žź', 'z']];
  for (const [chars, to] of groups) for (const c of chars) table[c] = to;
  return table;
})();

function slugPart(s: string): string {
  let out = '';
  let dash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let piece: string | undefined;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) piece = s[i];
    else if (c >= 65 && c <= 90) piece = String.fromCharCode(c + 32);
    else if (c >= 128) {
      const lower = (s[i] as string).toLowerCase();
      piece = FOLD[lower];
      if (piece === undefined) {
        const base = lower.normalize('NFD').charCodeAt(0);
        if ((base >= 97 && base <= 122) || (base >= 48 && base <= 57)) piece = String.fromCharCode(base);
      }
    }
    if (piece === undefined) {
      dash = out.length > 0;
    } else {
      if (dash) out += '-';
      out += piece;
      dash = false;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Per-run context: platform tables filtered and clamped to `now`.

interface RunPlatform {
  def: PlatformDef;
  to: number;
  slug: string;
  /** ERAS filtered by allowedOn, same indices */
  eraPublishers: readonly (readonly string[])[];
  eraDevelopers: readonly (readonly string[])[];
  code: (string | number)[] | null;
  franchises: readonly Franchise[];
}

interface Ctx {
  seed: number;
  nowMs: number;
  nowYear: number;
  platforms: Weighted<RunPlatform>;
  pokemonPlatforms: Weighted<RunPlatform>;
}

const CODE_LETTER = 0;
const CODE_DIGIT = 1;
const CODE_REGION = 2;
const CODE_REGION_LETTER = 3;
const CODE_SONY = 4;

function compileCode(tpl: string | null): (string | number)[] | null {
  if (tpl === null) return null;
  const parts: (string | number)[] = [];
  for (let i = 0; i < tpl.length; i++) {
    const ch = tpl[i] as string;
    if (ch === '@') parts.push(CODE_LETTER);
    else if (ch === '#') parts.push(CODE_DIGIT);
    else if (ch === '{') {
      const end = tpl.indexOf('}', i);
      const tok = tpl.slice(i + 1, end);
      parts.push(tok === 'R' ? CODE_REGION : tok === 'r' ? CODE_REGION_LETTER : CODE_SONY);
      i = end;
    } else parts.push(ch);
  }
  return parts;
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function fillCode(parts: readonly (string | number)[], r: Rng, region: number): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'string') out += p;
    else if (p === CODE_LETTER) out += LETTERS[r.int(26)];
    else if (p === CODE_DIGIT) out += String(r.int(10));
    else if (p === CODE_REGION) out += REGION_CODE[region];
    else if (p === CODE_REGION_LETTER) out += REGION_LETTER[region];
    else out += SONY_REGION[region];
  }
  return out;
}

function makeCtx(seed: number, now: Date): Ctx {
  const nowMs = now.getTime();
  if (!Number.isFinite(nowMs)) throw new RangeError('now must be a valid date');
  const nowYear = now.getUTCFullYear();
  const run: RunPlatform[] = [];
  for (const def of PLATFORMS) {
    if (def.from > nowYear) continue;
    const to = Math.min(def.to, nowYear);
    run.push({
      def,
      to,
      slug: slugPart(def.name),
      eraPublishers: ERAS.map((e, i) => e.publishers.filter((n) => allowedOn(n, def.family, i))),
      eraDevelopers: ERAS.map((e, i) => e.developers.filter((n) => allowedOn(n, def.family, i))),
      code: compileCode(def.code),
      // Platforms with their own publisher list only get franchises of those publishers.
      franchises: FRANCHISES.filter((f) => (f[2] === null || f[2] === def.family) && f[3] <= to
        && (def.publishers === undefined || def.publishers.includes(f[1]))),
    });
  }
  if (run.length === 0) throw new RangeError('now is earlier than every platform in the demo catalogue');
  const pokemon = run.filter((p) => p.def.family === 'nintendo' && p.to >= 1996 && p.def.name !== 'Virtual Boy');
  const pokemonPool = pokemon.length > 0 ? pokemon : run;
  return {
    seed,
    nowMs,
    nowYear,
    platforms: new Weighted(run, run.map((p) => p.def.weight)),
    pokemonPlatforms: new Weighted(pokemonPool, pokemonPool.map((p) => p.def.weight)),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Items. `core` draws what prices and account rows need; `buildItem` continues the same stream for the rest.

type Category = 'game' | 'console' | 'accessory';
type Pin = 'classic' | 'pokemon' | 'accent' | SpecialKind;

/**
 * A handful of ids in every hundred get fixed traits, so that even a 50-item catalogue contains an
 * accented name and every awkward character, all published and priced.
 */
function pinOf(id: number): Pin | null {
  switch (id % 100) {
    case 1: return 'classic';
    case 3: return 'pokemon';
    case 5: return 'accent';
    case 7: return 'percent';
    case 11: return 'underscore';
    case 13: return 'comma';
    case 17: return 'quote';
    case 19: return 'backslash';
    case 23: return 'mixed';
    default: return null;
  }
}

interface Core {
  id: number;
  pin: Pin | null;
  category: Category;
  platform: RunPlatform;
  status: CatalogueStatus;
  year: number;
  console: ConsoleDef | null;
}

function core(ctx: Ctx, r: Rng, id: number): Core {
  r.reset(rowSeed(ctx.seed, id, SALT_ITEM));
  const pin = pinOf(id);
  const c = r.next();
  const category: Category = pin !== null || c < 0.86 ? 'game' : c < 0.91 ? 'console' : 'accessory';
  const platform = pin === 'pokemon' ? ctx.pokemonPlatforms.pick(r) : ctx.platforms.pick(r);
  const s = r.next();
  const status: CatalogueStatus = pin !== null || s < 0.95 ? 'PUBLISHED' : s < 0.98 ? 'DRAFT' : 'ARCHIVED';
  const from = pin === 'pokemon' ? Math.max(platform.def.from, 1996) : platform.def.from;
  let year = r.intBetween(from, platform.to);
  let consoleDef: ConsoleDef | null = null;
  if (category === 'console') {
    consoleDef = r.pick(platform.def.consoles);
    year = Math.min(Math.max(consoleDef[2], platform.def.from), platform.to);
  }
  return { id, pin, category, platform, status, year, console: consoleDef };
}

function gameTitle(r: Rng, k: Core): { name: string; franchise: Franchise | null } {
  const p = k.platform;
  if (k.pin === 'pokemon') {
    return {
      name: r.pick([`Pokémon ${r.pick(ADJECTIVES)} ${r.pick(FRANCHISE_SUFFIXES)}`, `Pokémon ${r.pick(SUBTITLES)}`,
        `Pokémon Mystery Dungeon: ${r.pick(SUBTITLES)}`]),
      franchise: ['Pokémon', 'Nintendo', 'nintendo', 1996, 'RPG'],
    };
  }
  if (k.pin === 'accent') return { name: r.pick(ACCENT_TITLES)(r), franchise: null };
  if (k.pin !== null && k.pin !== 'classic') return { name: SPECIAL_TITLES[k.pin](r), franchise: null };
  const roll = r.next();
  if (roll < 0.015) return { name: SPECIAL_TITLES[r.pick(SPECIAL_KINDS)](r), franchise: null };
  if (roll < 0.04) return { name: r.pick(ACCENT_TITLES)(r), franchise: null };
  if (roll < 0.5) {
    const eligible = p.franchises;
    let f: Franchise | null = null;
    for (let tries = 0; tries < 3 && eligible.length > 0; tries++) {
      const cand = r.pick(eligible);
      if (cand[3] <= k.year) {
        f = cand;
        break;
      }
    }
    if (f !== null) {
      const fn = f[0];
      const t = r.int(7);
      let name: string;
      if (t === 0) name = `${fn} ${r.pick(NUMERALS)}`;
      else if (t === 1) name = `${PREFIXES.pick(r)} ${fn}${r.chance(0.5) ? ` ${r.pick(NUMERALS)}` : ''}`;
      else if (t === 2) name = `${fn}: ${r.pick(SUBTITLES)}`;
      else if (t === 3) name = `${fn} ${r.pick(FRANCHISE_SUFFIXES)}`;
      else if (t === 4) name = `${fn} ${r.pick(ADJECTIVES)} ${r.pick(FRANCHISE_SUFFIXES)}`;
      else if (t === 5 && p.def.suffix !== undefined) name = `${fn} ${p.def.suffix}`;
      else name = `${fn} ${r.pick(NUMERALS)}: ${r.pick(SUBTITLES)}`;
      return { name, franchise: f };
    }
  }
  const t = r.int(6);
  const adj = r.pick(ADJECTIVES);
  const noun = r.pick(NOUNS);
  let name: string;
  if (t === 0) name = `${adj} ${noun}`;
  else if (t === 1) name = `${adj} ${noun} ${r.pick(NUMERALS)}`;
  else if (t === 2) name = `${r.pick(NOUNS)} of the ${adj} ${noun}`;
  else if (t === 3) name = `The ${adj} ${noun}`;
  else if (t === 4) name = `${adj} ${noun}: ${r.pick(SUBTITLES)}`;
  else name = `${PREFIXES.pick(r)} ${adj} ${noun}`;
  return { name, franchise: null };
}

function eraOf(year: number): number {
  for (let i = 0; i < ERAS.length; i++) if (year <= (ERAS[i] as Era).until) return i;
  return ERAS.length - 1;
}

const orNull = <T>(r: Rng, p: number, v: T): T | null => (r.chance(p) ? null : v);

function buildItem(ctx: Ctx, r: Rng, id: number): DemoCatalogueItem {
  const k = core(ctx, r, id);
  const p = k.platform;
  const def = p.def;
  const region = REGION_PICK.pick(r);
  const pinned = k.pin !== null;
  let name: string;
  let subCategory: string | null;
  let modelNumber: string | null;
  let developer: string | null;
  let publisher: string | null;
  let genre: string | null;
  let format: string | null;
  let manufacturer: string | null;
  let description: string | null;

  if (k.category === 'game') {
    const title = gameTitle(r, k);
    name = title.name;
    const era = eraOf(k.year);
    const firstParty = FIRST_PARTY[def.family];
    let pub: string;
    if (title.franchise !== null) pub = title.franchise[1];
    else if (def.publishers !== undefined) pub = r.pick(def.publishers);
    else if (firstParty !== null && r.chance(0.2)) pub = firstParty;
    else pub = r.pick(p.eraPublishers[era] as readonly string[]);
    pub = publisherInYear(pub, k.year);
    const dev = r.chance(title.franchise !== null ? 0.7 : 0.4) ? pub
      : r.pick(def.publishers ?? (p.eraDevelopers[era] as readonly string[]));
    publisher = orNull(r, 0.02, pub);
    developer = orNull(r, 0.04, dev);
    genre = orNull(r, 0.03, title.franchise !== null ? title.franchise[4] : GENRES.pick(r));
    format = orNull(r, 0.03, r.pick(def.formats));
    manufacturer = orNull(r, 0.05, def.maker);
    const sc = r.next();
    subCategory = sc < 0.35 ? null : sc < 0.8 ? 'Standard Edition' : sc < 0.9 && def.budget !== undefined ? def.budget
      : sc < 0.95 ? 'Limited Edition' : "Collector's Edition";
    modelNumber = p.code !== null && r.chance(0.8) ? fillCode(p.code, r, region) : null;
    if (r.chance(0.06) && !pinned) description = null;
    else {
      const by = developer !== null && publisher !== null ? `, developed by ${developer} and published by ${publisher}`
        : publisher !== null ? `, published by ${publisher}` : '';
      const extra = region === 2 && r.chance(0.5) ? 'Japanese release; text is in Japanese.' : r.pick(GAME_BLURBS);
      description = `${genre ?? 'Game'} title for the ${def.name}${by} (${k.year}). ${extra}`;
    }
  } else if (k.category === 'console') {
    const cd = k.console as ConsoleDef;
    const product = cd[1] === null || r.chance(0.5) ? cd[0] : `${cd[0]} (${cd[1]})`;
    const v = r.next();
    let bundle: string | null = null;
    if (v < 0.15 && p.franchises.length > 0) {
      const f = r.pick(p.franchises);
      if (f[2] === def.family && f[3] <= k.year) bundle = `${f[0]} Bundle`;
    }
    name = bundle !== null ? `${product} - ${bundle}`
      : v < 0.45 ? `${product} - ${r.pick(CONSOLE_COLOURS)}` : product;
    subCategory = bundle !== null ? 'Bundle' : def.handheld ? 'Handheld Console' : 'Home Console';
    modelNumber = cd[1];
    developer = orNull(r, 0.1, def.maker);
    publisher = orNull(r, 0.1, def.maker);
    manufacturer = def.maker;
    genre = null;
    format = null;
    description = orNull(r, 0.06, `${cd[0]} by ${def.maker}, released in ${k.year}. ${r.pick([
      'Includes the console, power supply and AV cable.', 'Console only, no controllers.',
      'Boxed with inserts and manual.', 'Tested and working; minor cosmetic wear.',
      'Region-locked to its launch territory.'])}`);
  } else {
    const firstParty = def.accessories.length > 0 && r.chance(0.55);
    genre = null;
    format = null;
    developer = null;
    if (firstParty) {
      const a = r.pick(def.accessories);
      name = `${def.name} ${a[0]}`;
      subCategory = a[2];
      modelNumber = a[1];
      manufacturer = def.maker;
      publisher = orNull(r, 0.2, def.maker);
      description = orNull(r, 0.08, `Official ${def.maker} ${a[0]} for the ${def.name}.`);
    } else {
      let brand = r.pick(ACCESSORY_BRANDS);
      if (brand[1] > p.to) brand = ACCESSORY_BRANDS[1] as (typeof ACCESSORY_BRANDS)[number];
      const kind = r.pick(def.handheld ? HANDHELD_KINDS : HOME_KINDS);
      name = r.chance(0.5) ? `${brand[0]} ${kind[0]} for ${def.name}` : `${brand[0]} ${def.name} ${kind[0]}`;
      subCategory = kind[1];
      modelNumber = r.chance(0.5) ? `${brand[2]}${r.intBetween(1000, 9999)}` : null;
      manufacturer = brand[0];
      publisher = orNull(r, 0.5, brand[0]);
      const lo = Math.max(def.from, brand[1]);
      if (lo <= p.to) k.year = r.intBetween(lo, p.to);
      description = orNull(r, 0.15, `Third-party ${kind[0]} made by ${brand[0]} for the ${def.name}.`);
    }
  }

  return {
    masterItemId: id,
    name,
    slug: `${slugPart(name)}-${p.slug}-${id}`,
    category: k.category,
    platform: def.name,
    status: k.status,
    subCategory,
    modelNumber,
    releaseYear: !pinned && r.chance(0.01) ? null : k.year,
    region: r.chance(k.category === 'accessory' ? 0.3 : 0.02) ? null : REGIONS[region],
    format,
    developer,
    publisher,
    genre,
    manufacturer,
    description,
    imageUrl: !pinned && r.chance(0.05) ? null : `https://images.shelfapi.dev/items/${id}.jpg`,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Prices. UPCs are a bijection of the id (mostly unique) with a real check digit; a few items share the
// previous id's barcode, as re-releases do, so a upc filter can match more than one item.

const UPC_LEAD = ['0', '0', '0', '7', '8'];

function upcFor(seed: number, id: number): string {
  const h = fmix((Math.imul(id, 0x27d4eb2d) ^ seed) >>> 0);
  if (id > 1 && h % 300 === 0) return upcFor(seed, id - 1);
  const offset = fmix(seed ^ 0x5bd1e995) % 10_000_000_000;
  const body = ((id % 10_000_000_000) * 7919 + offset) % 10_000_000_000;
  const digits = (UPC_LEAD[h % UPC_LEAD.length] as string) + String(body).padStart(10, '0');
  let sum = 0;
  for (let i = 0; i < 11; i++) sum += (digits.charCodeAt(i) - 48) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}

interface PricePoints {
  loose: number | null;
  cib: number | null;
  new: number | null;
  boxOnly: number | null;
  manualOnly: number | null;
}

function pricePoints(r: Rng, k: Core): PricePoints {
  const def = k.platform.def;
  const retro = k.year < 2005;
  const modern = k.year >= 2013;
  let median: number;
  let sigma: number;
  if (k.category === 'game') {
    median = def.px[0];
    sigma = 0.8;
  } else if (k.category === 'console') {
    median = def.px[1];
    sigma = 0.35;
  } else {
    median = Math.max(4, def.px[0] * 0.9);
    sigma = 0.6;
  }
  const loose = Math.max(0.99, round2(median * Math.exp(sigma * r.normal())));
  const cib = Math.max(round2(loose * (retro ? r.between(1.6, 3.2) : r.between(1.15, 1.6))), round2(loose + 0.5));
  const nw = Math.max(round2(cib * (retro ? r.between(2, 5) : r.between(1.1, 1.5))), round2(cib + 1));
  let boxOnly: number | null = null;
  let manualOnly: number | null = null;
  if (k.category === 'game') {
    boxOnly = r.chance(modern ? 0.6 : 0.3) ? null : Math.max(0.99, round2(cib * r.between(0.15, 0.45)));
    manualOnly = r.chance(modern ? 0.9 : 0.35) ? null : Math.max(0.5, round2(cib * r.between(0.06, 0.25)));
  }
  const nullLoose = r.chance(0.03);
  const nullCib = !nullLoose && r.chance(0.06);
  return {
    loose: nullLoose ? null : loose,
    cib: nullCib ? null : cib,
    new: r.chance(retro ? 0.25 : 0.1) ? null : nw,
    boxOnly,
    manualOnly,
  };
}

/** An earlier scrape of the same item: the same market give or take, where a point may since have appeared. */
function earlierPoints(r: Rng, latest: PricePoints): PricePoints {
  const move = (v: number | null, floor: number): number | null =>
    v === null ? null : Math.max(floor, round2(v * r.between(0.8, 1.15)));
  const loose = move(latest.loose, 0.99);
  let cib = move(latest.cib, 0.99);
  if (cib !== null && loose !== null && cib <= loose) cib = round2(loose + 0.5);
  let nw = r.chance(0.3) ? null : move(latest.new, 0.99);
  const below = cib ?? loose;
  if (nw !== null && below !== null && nw <= below) nw = round2(below + 1);
  return {
    loose,
    cib,
    new: nw,
    boxOnly: r.chance(0.3) ? null : move(latest.boxOnly, 0.99),
    manualOnly: move(latest.manualOnly, 0.5),
  };
}

/** All price records of one item, in the order the aggregator delivered them (not necessarily by date). */
function priceRecords(ctx: Ctx, itemRng: Rng, priceRng: Rng, id: number): DatasetPrice[] {
  const k = core(ctx, itemRng, id);
  const r = priceRng.reset(rowSeed(ctx.seed, id, SALT_PRICE));
  if (k.pin === null && r.chance(0.04)) return [];
  const upc = upcFor(ctx.seed, id);
  const points = pricePoints(r, k);
  const latest: DatasetPrice = { masterItemId: id, upc, ...points, scrapeDate: '' };
  if (!r.chance(0.06)) {
    latest.scrapeDate = iso(ctx.nowMs - r.between(MINUTE, 30 * DAY));
    return [latest];
  }
  latest.scrapeDate = iso(ctx.nowMs - r.between(HOUR, 14 * DAY));
  const older: DatasetPrice = {
    masterItemId: id,
    upc,
    ...earlierPoints(r, points),
    scrapeDate: iso(ctx.nowMs - r.between(15 * DAY, 30 * DAY)),
  };
  return r.chance(0.5) ? [older, latest] : [latest, older];
}

function latestPrice(records: readonly DatasetPrice[]): DatasetPrice | null {
  let best: DatasetPrice | null = null;
  for (const p of records) if (best === null || p.scrapeDate > best.scrapeDate) best = p;
  return best;
}

// ---------------------------------------------------------------------------------------------------------
// Accounts and their rows.

const POINT_OF: Readonly<Record<Condition, keyof PricePoints>> = {
  LOOSE: 'loose',
  CIB: 'cib',
  NEW: 'new',
  BOX_ONLY: 'boxOnly',
  MANUAL_ONLY: 'manualOnly',
};

const GAME_CONDITIONS = weighted<Condition>([['LOOSE', 35], ['CIB', 40], ['NEW', 10], ['BOX_ONLY', 8],
  ['MANUAL_ONLY', 7]]);
const HARDWARE_CONDITIONS = weighted<Condition>([['LOOSE', 55], ['CIB', 35], ['NEW', 10]]);
const WISHLIST_CONDITIONS = weighted<Condition>([['CIB', 60], ['NEW', 30], ['LOOSE', 10]]);
const LARGE_CONDITIONS = weighted<Condition>([['LOOSE', 45], ['CIB', 40], ['NEW', 10], ['BOX_ONLY', 3],
  ['MANUAL_ONLY', 2]]);

const CONDITION_LABEL: Readonly<Record<Condition, string>> = {
  LOOSE: 'Loose',
  CIB: 'Complete in Box',
  NEW: 'New, Sealed',
  BOX_ONLY: 'Box Only',
  MANUAL_ONLY: 'Manual Only',
};

const LOCATIONS = ['Shelf A', 'Shelf B', 'Shelf C', 'Display cabinet', 'Living room TV stand', 'Storage bin 1',
  'Storage bin 2', 'Closet box', 'Office bookcase', 'Garage tote', 'Game room', 'Safe'];
const TITLE_TAILS = ['', '', '', ' - Tested', ' - Great Shape', ' - Authentic', ' - Fast Shipping', ' - Rare'];
const SHIPPING = [0, 3.99, 4.5, 5, 5.99, 7.5];
const HARDWARE_SHIPPING = [9.99, 12.5, 14.99, 19.99];
const CARRIERS = weighted<string>([['USPS', 50], ['UPS', 25], ['FedEx', 15], ['DHL', 10]]);
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ALNUM_UPPER = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** About how many collection rows and listings pick a master item; sets when distinct picks are affordable. */
const ACCOUNT_ROWS = 400;

interface ItemInfo {
  core: Core;
  item: DemoCatalogueItem;
  latest: DatasetPrice | null;
}

interface Owned {
  row: DatasetCollectionItem;
  createdMs: number;
}

interface ListingDraft {
  row: DatasetListing;
  createdMs: number;
  updatedMs: number;
}

interface TxnPlan {
  status: DatasetTransaction['status'];
  listing: ListingDraft;
  buyer: string;
  createdMs: number;
  acceptedAmount: number | null;
}

class AccountBuilder {
  private readonly info = new Map<number, ItemInfo>();
  private readonly itemRng = new Rng(0);
  private readonly priceRng = new Rng(0);
  private readonly usedMasters = new Set<number>();
  private readonly tokens = new Set<string>();
  readonly r: Rng;

  constructor(
    readonly ctx: Ctx,
    private readonly items: number,
  ) {
    this.r = new Rng(rowSeed(ctx.seed, 0, SALT_ACCOUNTS));
  }

  lookup(id: number): ItemInfo {
    let i = this.info.get(id);
    if (i === undefined) {
      const item = buildItem(this.ctx, this.itemRng, id);
      const k = core(this.ctx, this.itemRng, id);
      const latest = latestPrice(priceRecords(this.ctx, this.itemRng, this.priceRng, id));
      i = { core: k, item, latest };
      this.info.set(id, i);
    }
    return i;
  }

  /** Market price of a master item at a condition, as the API would show it (null when unknown). */
  market(id: number, condition: Condition): number | null {
    const i = this.lookup(id);
    if (i.core.status !== 'PUBLISHED' || i.latest === null) return null;
    return i.latest[POINT_OF[condition]] ?? null;
  }

  /**
   * Picks a master id satisfying `ok`, preferring ids not used yet; small catalogues run out of fresh ids, so
   * it falls back to repeats and finally to any id at all.
   */
  pickMaster(ok: (i: ItemInfo) => boolean): number {
    const fresh = this.items >= 4 * ACCOUNT_ROWS;
    for (let t = 0; t < 200; t++) {
      const id = 1 + this.r.int(this.items);
      if (fresh && this.usedMasters.has(id)) continue;
      if (ok(this.lookup(id))) {
        this.usedMasters.add(id);
        return id;
      }
    }
    for (let t = 0; t < 200; t++) {
      const id = 1 + this.r.int(this.items);
      if (ok(this.lookup(id))) return id;
    }
    return 1 + this.r.int(this.items);
  }

  conditionFor(id: number, pool?: Weighted<Condition>): Condition {
    if (pool !== undefined) return pool.pick(this.r);
    return this.lookup(id).core.category === 'game' ? GAME_CONDITIONS.pick(this.r) : HARDWARE_CONDITIONS.pick(this.r);
  }

  token(): string {
    for (;;) {
      let t = 'pub_';
      for (let i = 0; i < 22; i++) t += BASE62[this.r.int(62)];
      if (!this.tokens.has(t)) {
        this.tokens.add(t);
        return t;
      }
    }
  }

  /** A time at least one second before `now`. */
  past(ms: number): number {
    return Math.min(Math.floor(ms), this.ctx.nowMs - 1000);
  }
}

function buildCollection(b: AccountBuilder, account: string, owned: number, wishlist: number, sold: number,
  unpublished: number): Owned[] {
  const { r } = b;
  const now = b.ctx.nowMs;
  const rows: Owned[] = [];
  const add = (masterItemId: number, condition: Condition, status: DatasetCollectionItem['status']): void => {
    const acquiredMs = now - r.between(2 * DAY, 6 * 365 * DAY);
    const createdMs = status === 'WISHLIST' ? acquiredMs : b.past(acquiredMs + r.between(0, 30 * DAY));
    const updatedMs = status === 'SOLD' || r.chance(0.4) ? b.past(createdMs + r.between(HOUR, now - createdMs))
      : createdMs;
    const market = b.market(masterItemId, condition);
    const purchasePrice = status === 'WISHLIST' ? 0
      : market !== null ? round2(market * r.between(0.5, 1.3)) : round2(r.between(5, 80));
    rows.push({
      row: {
        account,
        masterItemId,
        condition,
        status,
        purchasePrice,
        acquiredAt: iso(acquiredMs),
        location: status === 'WISHLIST' ? 'Wishlist' : r.pick(LOCATIONS),
        isFavorite: r.chance(0.1),
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs,
    });
  };
  const publishedPriced = (i: ItemInfo): boolean => i.core.status === 'PUBLISHED' && i.latest !== null;
  for (let n = 0; n < owned; n++) {
    // Most owned rows get a known price at their condition so the collection value is substantial; a few do
    // not, as in real collections, and count as 0.
    const wantPrice = n % 10 !== 9;
    let id = b.pickMaster(publishedPriced);
    let condition = b.conditionFor(id);
    for (let t = 0; wantPrice && t < 8 && b.market(id, condition) === null; t++) {
      id = b.pickMaster(publishedPriced);
      condition = b.conditionFor(id);
    }
    add(id, condition, 'OWNED');
  }
  for (let n = 0; n < wishlist; n++) {
    const id = b.pickMaster((i) => i.core.status === 'PUBLISHED');
    add(id, b.conditionFor(id, WISHLIST_CONDITIONS), 'WISHLIST');
  }
  for (let n = 0; n < sold; n++) {
    const id = b.pickMaster(publishedPriced);
    add(id, b.conditionFor(id), 'SOLD');
  }
  // Rows whose master item is not published: they must still be listed, with an unknown (zero) value.
  for (let n = 0; n < unpublished; n++) {
    const id = b.pickMaster((i) => i.core.status !== 'PUBLISHED');
    if (b.lookup(id).core.status === 'PUBLISHED') break;
    add(id, b.conditionFor(id), n === 0 ? 'OWNED' : 'WISHLIST');
  }
  return rows;
}

function assignIds<T extends { createdMs: number }>(rows: T[], setId: (row: T, id: number) => void): void {
  rows.sort((a, b) => a.createdMs - b.createdMs);
  rows.forEach((row, i) => setId(row, i + 1));
}

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

interface Social {
  collection: DatasetCollectionItem[];
  listings: DatasetListing[];
  offers: DatasetOffer[];
  transactions: DatasetTransaction[];
}

const TXN_STATUSES: readonly DatasetTransaction['status'][] = ['COMPLETED', 'COMPLETED', 'COMPLETED', 'DELIVERED',
  'DELIVERED', 'SHIPPED', 'SHIPPED', 'PAID', 'CANCELLED', 'REFUNDED'];
const SOLD_LIKE = new Set<DatasetTransaction['status']>(['COMPLETED', 'DELIVERED', 'SHIPPED']);

function buildSocial(ctx: Ctx, items: number): Social {
  const b = new AccountBuilder(ctx, items);
  const r = b.r;
  const now = ctx.nowMs;
  const accounts = ['demo', 'trader'] as const;
  const other = (a: string): string => (a === 'demo' ? 'trader' : 'demo');

  const collection = [
    ...buildCollection(b, 'demo', 200, 60, 30, 2),
    ...buildCollection(b, 'trader', 60, 10, 12, 0),
  ];
  assignIds(collection, (o, id) => (o.row.id = id));

  // Listings come from the seller's own shelf; rows already sold back the sold listings.
  const listings: ListingDraft[] = [];
  const txnPlans: TxnPlan[] = [];
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
          : `${info.item.name} - ${info.item.platform}`} (${CONDITION_LABEL[source.condition]})${r.pick(TITLE_TAILS)}`,
        condition: source.condition,
        status,
        price,
        currency: 'USD',
        acceptsTrade: r.chance(0.4),
        shippingCost: r.pick(hardware ? HARDWARE_SHIPPING : SHIPPING),
        publicToken: b.token(),
      },
      createdMs,
      updatedMs,
    };
    listings.push(draft);
    return draft;
  };

  for (const seller of accounts) {
    const buyer = other(seller);
    for (const status of TXN_STATUSES) {
      const source = takeRow(seller, SOLD_LIKE.has(status) ? 'SOLD' : 'OWNED');
      const listingStatus: DatasetListing['status'] = SOLD_LIKE.has(status) || status === 'REFUNDED' ? 'SOLD'
        : status === 'PAID' ? 'RESERVED' : 'ACTIVE';
      // Old enough that the estimated delivery of the sale has passed too.
      const listing = makeListing(seller, source, listingStatus, now - r.between(25 * DAY, 200 * DAY));
      const createdMs = r.between(listing.createdMs + DAY, now - 9 * DAY);
      txnPlans.push({ status, listing, buyer, createdMs, acceptedAmount: null });
    }
    const open: DatasetListing['status'][] = seller === 'demo'
      ? ['ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'RESERVED',
        'CANCELLED', 'CANCELLED', 'CANCELLED']
      : [...Array<DatasetListing['status']>(20).fill('ACTIVE'), 'RESERVED', 'RESERVED', 'CANCELLED', 'CANCELLED',
        'CANCELLED', 'CANCELLED'];
    for (const status of open) {
      const createdMs = status === 'CANCELLED' ? now - r.between(10 * DAY, 200 * DAY) : now - r.between(HOUR, 90 * DAY);
      makeListing(seller, takeRow(seller, 'OWNED'), status, createdMs);
    }
  }
  assignIds(listings, (l, id) => (l.row.id = id));

  // Offers: the accepted ones led to some of the sales above; the rest sit on the other side's open listings.
  interface OfferDraft {
    row: DatasetOffer;
    createdMs: number;
  }
  const offers: OfferDraft[] = [];
  const tradeCandidates = (account: string): DatasetCollectionItem[] => {
    const listed = new Set(listings.filter((l) => l.row.account === account).map((l) => l.row.masterItemId));
    return collection
      .filter((o) => o.row.account === account && o.row.status === 'OWNED' && !listed.has(o.row.masterItemId))
      .map((o) => o.row);
  };
  const money = (n: number): string => n.toFixed(2);
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

  for (const plan of txnPlans) {
    if (plan.status === 'CANCELLED' || !r.chance(0.4)) continue;
    const amount = round2(plan.listing.row.price * r.between(0.8, 0.95));
    const createdMs = r.between(plan.listing.createdMs + HOUR, plan.createdMs - HOUR);
    addOffer(plan.buyer, plan.listing, 'ACCEPTED', createdMs, amount, null);
    plan.acceptedAmount = amount;
  }
  for (const offerer of accounts) {
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

  const transactions: { row: DatasetTransaction; createdMs: number }[] = [];
  for (const plan of txnPlans) {
    const carrier = CARRIERS.pick(r);
    const amount = plan.acceptedAmount ?? plan.listing.row.price;
    const estimatedMs = plan.createdMs + r.intBetween(3, 7) * DAY;
    const delivered = plan.status === 'DELIVERED' || plan.status === 'COMPLETED' || plan.status === 'REFUNDED';
    const actualMs = delivered ? b.past(Math.max(plan.createdMs + DAY, estimatedMs + r.between(-DAY, 2 * DAY))) : null;
    let updatedMs: number;
    switch (plan.status) {
      case 'PAID':
      case 'CANCELLED':
        updatedMs = plan.createdMs + r.between(MINUTE, 12 * HOUR);
        break;
      case 'SHIPPED':
        updatedMs = plan.createdMs + r.between(12 * HOUR, 2 * DAY);
        break;
      case 'DELIVERED':
        updatedMs = actualMs as number;
        break;
      default:
        updatedMs = (actualMs as number) + r.between(HOUR, 3 * DAY);
    }
    updatedMs = b.past(updatedMs);
    const l = plan.listing;
    if (l.row.status !== 'ACTIVE') l.updatedMs = Math.max(l.updatedMs, b.past(plan.createdMs));
    transactions.push({
      row: {
        buyer: plan.buyer,
        seller: l.row.account,
        listingId: l.row.id as number,
        amount,
        platformFee: round2(amount * 0.08),
        status: plan.status,
        trackingNumber: trackingNumber(r, carrier),
        shippingCarrier: carrier,
        estimatedDelivery: iso(estimatedMs),
        actualDelivery: actualMs === null ? null : iso(actualMs),
        createdAt: iso(plan.createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs: plan.createdMs,
    });
  }
  assignIds(transactions, (t, id) => (t.row.id = id));

  for (const l of listings) {
    l.row.createdAt = iso(l.createdMs);
    l.row.updatedAt = iso(Math.max(l.updatedMs, l.createdMs));
  }
  return {
    collection: collection.map((o) => o.row),
    listings: listings.map((l) => l.row),
    offers: offers.map((o) => o.row),
    transactions: transactions.map((t) => t.row),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Public API.

function checkItems(items: number): void {
  if (!Number.isSafeInteger(items) || items < 1) throw new RangeError(`items must be a positive integer, got ${items}`);
}

export function generateDemo(opts: DemoOptions): DemoData {
  checkItems(opts.items);
  const seed = (opts.seed ?? DEFAULT_DEMO_SEED) >>> 0;
  const ctx = makeCtx(seed, opts.now);
  const items = opts.items;
  const social = buildSocial(ctx, items);
  return {
    accounts: [
      { ref: 'demo', email: 'demo@shelfapi.dev', plan: 'enthusiast', planStatus: 'active' },
      { ref: 'trader', email: 'trader@shelfapi.dev', plan: 'addon', planStatus: 'active' },
    ],
    keys: [{ ref: 'demo', account: 'demo', name: 'demo', scopes: [...SCOPES], expiresAt: null, revoked: false }],
    catalogue() {
      return {
        size: items,
        *[Symbol.iterator](): Generator<DemoCatalogueItem> {
          const r = new Rng(0);
          for (let id = 1; id <= items; id++) yield buildItem(ctx, r, id);
        },
      };
    },
    prices() {
      let walked = 0;
      return {
        fraction: () => walked / items,
        *[Symbol.iterator](): Generator<DatasetPrice> {
          const itemRng = new Rng(0);
          const priceRng = new Rng(0);
          for (let id = 1; id <= items; id++) {
            yield* priceRecords(ctx, itemRng, priceRng, id);
            walked = id;
          }
        },
      };
    },
    ...social,
  };
}

/**
 * `count` OWNED rows for one account over master ids 1..items (distinct while count <= items), with ids
 * startId, startId + 1, ...; meant for load benchmarks, so it needs no catalogue lookups.
 */
export function largeCollection(accountRef: string, count: number, items: number, startId: number,
  opts: { seed?: number; now?: Date } = {}): DatasetCollectionItem[] {
  checkItems(items);
  const nowMs = (opts.now ?? new Date()).getTime();
  const r = new Rng(rowSeed((opts.seed ?? DEFAULT_DEMO_SEED) >>> 0, hashString(accountRef), SALT_LARGE));
  let stride = Math.max(1, Math.floor(items * 0.6180339887));
  while (gcd(stride, items) !== 1) stride++;
  const offset = r.int(items);
  const rows: DatasetCollectionItem[] = [];
  for (let i = 0; i < count; i++) {
    const acquiredMs = nowMs - r.between(DAY, 8 * 365 * DAY);
    const createdMs = Math.min(acquiredMs + r.between(0, 30 * DAY), nowMs - 1000);
    rows.push({
      id: startId + i,
      account: accountRef,
      masterItemId: 1 + ((offset + (i % items) * stride) % items),
      condition: LARGE_CONDITIONS.pick(r),
      status: 'OWNED',
      purchasePrice: round2(r.between(2, 150)),
      acquiredAt: iso(acquiredMs),
      location: r.pick(LOCATIONS),
      isFavorite: r.chance(0.05),
      createdAt: iso(createdMs),
      updatedAt: iso(createdMs),
    });
  }
  return rows;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
