// `shelfapi seed --demo` promises the same rows for the same seed: a demo database built last month and one
// built today hold the same items, prices and account rows. These digests were computed from the generator
// as it stood before it was split into modules, so any change to a generated row shows here. A deliberate
// change to the demo data updates them, and says so in its commit.
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  DEFAULT_DEMO_SEED,
  DEMO_PLATFORM_YEARS,
  generateDemo,
  largeCollection,
} from '../../src/demo/index.js';

const NOW = new Date('2026-03-15T12:00:00.000Z');

/** JSON with object keys sorted, so a row's digest does not depend on the order its fields were written in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function digest(rows: Iterable<unknown>): string {
  const hash = createHash('sha256');
  let count = 0;
  for (const row of rows) {
    hash.update(canonical(row));
    hash.update('\n');
    count++;
  }
  return `${count}:${hash.digest('hex')}`;
}

/** One digest per part of the demo, so a failure names the part that changed. */
function demoDigests(items: number, seed?: number): Record<string, string> {
  const d = generateDemo({ items, now: NOW, ...(seed === undefined ? {} : { seed }) });
  return {
    accounts: digest(d.accounts),
    keys: digest(d.keys),
    catalogue: digest(d.catalogue()),
    prices: digest(d.prices()),
    collection: digest(d.collection),
    listings: digest(d.listings),
    offers: digest(d.offers),
    transactions: digest(d.transactions),
  };
}

describe('demo data digests (the same seed gives the same rows)', () => {
  it('the default demo (5,000 items, the default seed)', () => {
    assert.equal(DEFAULT_DEMO_SEED, 20_240_601);
    assert.deepEqual(demoDigests(5_000), {
      accounts: '2:cbea61aa536fb4eb8256efc07c0783aae2f9dd446cc9d65d4356215834d1b5b8',
      keys: '1:61bbb7669faa9f3703db0cb4c83a53ce1f6d38ed22571ded0bfaddf802395e5a',
      catalogue: '5000:98f5faf13215f0bcefb6725815954debdf651977ef869381b6129e33d92ed433',
      prices: '5091:3374c533290265ac5ee6cb43baedf04d973e9f536001fa94b6e03866ed7e3fde',
      collection: '374:910b893815bc6190588ebdd4f1d696f4155d5d93b47eda84d7c62a79358fdcf0',
      listings: '60:e7e0730660bcd419171562ec4e9c2d1d6608efbfa1b4b16fa63ad0df2d034ef8',
      offers: '33:b61659c616c3fa33860f295acd0395e5f6f565470d72c561bf1eaa039945a38e',
      transactions: '20:fdff8d7390b0f122bdc0f4bd856cf447e08b18bc79d6fabcaab3ea50ca73f95d',
    });
  });

  it('the smallest demo seed --demo accepts (50 items)', () => {
    assert.deepEqual(demoDigests(50), {
      accounts: '2:cbea61aa536fb4eb8256efc07c0783aae2f9dd446cc9d65d4356215834d1b5b8',
      keys: '1:61bbb7669faa9f3703db0cb4c83a53ce1f6d38ed22571ded0bfaddf802395e5a',
      catalogue: '50:9a2e9b69e55134f1d26643ee113d83b3daa34351a0ad391ae4b1c32d684036b7',
      prices: '54:efa34f82119caa65ba95a4afbe91bf3ce994530372891a2611925874155627d1',
      collection: '374:a992eeff2739f4857508ebed9783a5bc4dad353dac75817102d0ed6242a15d88',
      listings: '60:615217b8cbb7f5287d14d724d401199bc7b80071112e4f14d18c1bd11f4478ac',
      offers: '38:61497db3f973ab997ac4b67321a20f6703374d22c3ee0c4eebc6dc84964474af',
      transactions: '20:9636932d4787220e4594ffd65552390ff6a2f4284c81ddf0c7411d8622575206',
    });
  });

  it('other seeds and sizes', () => {
    assert.deepEqual(
      {
        seed42items500: demoDigests(500, 42),
        seed7items2000: demoDigests(2_000, 7),
        defaultSeedItems20000: demoDigests(20_000),
      },
      {
        seed42items500: {
          accounts: '2:cbea61aa536fb4eb8256efc07c0783aae2f9dd446cc9d65d4356215834d1b5b8',
          keys: '1:61bbb7669faa9f3703db0cb4c83a53ce1f6d38ed22571ded0bfaddf802395e5a',
          catalogue: '500:d9b40831be16a31a97e285151c4af355f1b8129bf5f8cc23f7b0257bed69a7e4',
          prices: '513:81e0f38a75a4472fdd15f450f75f0d1c756c7e73aefd5e924e1defbb168de1a8',
          collection: '374:7c3c2f47a99bfdf66932e436e1878dc706eb07e33da9edec22b4247cf90c1fc9',
          listings: '60:4c53466ef1a47d861292367d9caac06b7f9f76fbcfa63522e272233d540ff617',
          offers: '34:61be9ac407883aaf3fdfe8b30a2931d54ab981226fce917b504e2a7aadb2a654',
          transactions: '20:a789ab3fc6b6efe2a37dfc52174b3286ef5154d55a3225ca36ac87b24ed577c2',
        },
        seed7items2000: {
          accounts: '2:cbea61aa536fb4eb8256efc07c0783aae2f9dd446cc9d65d4356215834d1b5b8',
          keys: '1:61bbb7669faa9f3703db0cb4c83a53ce1f6d38ed22571ded0bfaddf802395e5a',
          catalogue: '2000:12227732da4efc2d0be39e227ec27584b16ca5e503da9f502a56328092591a45',
          prices: '2028:27ffde6f1f0dc4198c2acf0cf59a77d0463a51174a60016b5f017a52e1b8a401',
          collection: '374:2d9ce3c6f13b5b6ccc4289b790f27057547ee9df3e27df3a3a762dd8db676b7a',
          listings: '60:e0fee4be811005134eeb9b7fa050b60c2436e91fab6f31bdb4a1801b40f558cf',
          offers: '31:534aa2b6e37cac4fd5804a3d52d751c81fd7253acdf07a246456cd2c073d3d57',
          transactions: '20:49f8866bf887194e07d4feea8170663257febbf2ca55e60c3ead759fee624bff',
        },
        defaultSeedItems20000: {
          accounts: '2:cbea61aa536fb4eb8256efc07c0783aae2f9dd446cc9d65d4356215834d1b5b8',
          keys: '1:61bbb7669faa9f3703db0cb4c83a53ce1f6d38ed22571ded0bfaddf802395e5a',
          catalogue: '20000:7f612a5e270b86b1ea295d7c07fe53f3ebc96e478b81c6cb4aa5a3b4aa3e3eeb',
          prices: '20411:d8352fbace7ac1a7bf05b477cc67cfd6ad2401d243ae79eeea1e0d419a275ea5',
          collection: '374:f0f7192eb7279baf9ed0a7858e7f4c9a703fcc80da6db4a58e34c6b7700765e3',
          listings: '60:980ed9e94b49adf754fcbb2d92a1df6113c5b82f714b2e8379636991f335003c',
          offers: '34:87e531ab621f56ee8e035be1da1d0e6e1c31a7d8525b69b36b1b82f285fe64e3',
          transactions: '20:86dcc9365d32ca02e5337db6720f5e25a06bf3d54987dbd9df6a228711665285',
        },
      },
    );
  });

  it("the collector's large collection, as seed --demo and the benchmarks make it", () => {
    // seed --demo at its default size: min(10,000, items) rows after the demo's own collection rows.
    const demo = generateDemo({ items: 5_000, now: NOW });
    const startId = demo.collection.reduce((max, r) => Math.max(max, r.id ?? 0), 0) + 1;
    assert.deepEqual(
      {
        atDemoSize: digest(largeCollection('collector', 5_000, 5_000, startId, { now: NOW })),
        tenThousand: digest(largeCollection('collector', 10_000, 200_000, 1, { now: NOW })),
        otherSeed: digest(largeCollection('bench', 300, 50, 1, { now: NOW, seed: 7 })),
      },
      {
        atDemoSize: '5000:196df18b78e658af87e0f4295aef3cf798c4fcb8d1e970e3b118481e7ddf0261',
        tenThousand: '10000:35551166e470f6f9edb60059dc6c6276b17b2c0550e6041deaabd94149b609af',
        otherSeed: '300:7a27830359accaefbf97ede5d3215549057f8d535f312e79fbce2689c2be1517',
      },
    );
  });

  it('the platform release spans', () => {
    assert.equal(digest(Object.entries(DEMO_PLATFORM_YEARS)),
      '38:283a0f4282dea2f1ddc1141455e70a6a5ea7910cf1378fb853a789fea26a23bd');
  });
});
