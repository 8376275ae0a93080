/**
 * The reference data the demo draws from: real platforms with their consoles and accessories, the
 * publishers and studios of each era, game series, and the parts generated titles are made of. It lives in
 * JSON files in ./reference, apart from the code; each file is checked against its schema when this module
 * loads, and the schemas give the types the generator works with, so a bad edit to a file stops the demo
 * with the file and the place named instead of producing odd rows.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Check, Errors } from 'typebox/value';

import hardwareJson from './reference/hardware.json' with { type: 'json' };
import marketplaceJson from './reference/marketplace.json' with { type: 'json' };
import namePartsJson from './reference/name-parts.json' with { type: 'json' };
import platformsJson from './reference/platforms.json' with { type: 'json' };
import publishersJson from './reference/publishers.json' with { type: 'json' };
import seriesJson from './reference/series.json' with { type: 'json' };

function checked<T extends TSchema>(file: string, schema: T, data: unknown): Static<T> {
  if (Check(schema, data)) return data;
  const [first] = Errors(schema, data);
  throw new Error(`src/demo/reference/${file}: ${first?.instancePath ?? ''} ${first?.message ?? 'does not match its schema'}`);
}

const Names = Type.Array(Type.String());
/** [value, weight] pairs: a value is drawn with probability proportional to its weight. */
const WeightedNames = Type.Array(Type.Tuple([Type.String(), Type.Number({ exclusiveMinimum: 0 })]));
const Year = Type.Integer({ minimum: 1970, maximum: 2100 });

export const FAMILIES = ['nintendo', 'sega', 'sony', 'microsoft', 'atari', 'snk', 'nec', 'other'] as const;
const FamilySchema = Type.Enum(FAMILIES);
/** Which maker's systems a platform belongs to; publishers and series can be tied to one. */
export type Family = Static<typeof FamilySchema>;

const PlatformSchema = Type.Object({
  name: Type.String(),
  family: FamilySchema,
  from: Year,
  to: Year,
  maker: Type.String(),
  /** Media a game comes on; a format listed twice is drawn twice as often. */
  formats: Names,
  /** How many of the catalogue's items are for this platform, relative to the others. */
  weight: Type.Number({ exclusiveMinimum: 0 }),
  handheld: Type.Boolean(),
  /** Median loose price of a game and of a console, USD. */
  medianLoose: Type.Object({ game: Type.Number(), console: Type.Number() }),
  /** Product-code template: @ a letter, # a digit, {R} USA/EUR/JPN, {r} E/P/J, {S} US/ES/PS; null: none. */
  productCode: Type.Union([Type.String(), Type.Null()]),
  /** What some series titles end with on this platform ("Kirby 64"). */
  titleSuffix: Type.Optional(Type.String()),
  /** The platform's budget re-release label ("Player's Choice"). */
  budgetLabel: Type.Optional(Type.String()),
  /** Platforms whose games came from a few publishers only list them; others draw from the era's. */
  publishers: Type.Optional(Names),
  consoles: Type.Array(Type.Object({ name: Type.String(), model: Type.Union([Type.String(), Type.Null()]), year: Year })),
  accessories: Type.Array(
    Type.Object({ name: Type.String(), model: Type.Union([Type.String(), Type.Null()]), subCategory: Type.String() }),
  ),
});
export type PlatformDef = Static<typeof PlatformSchema>;
export type ConsoleDef = PlatformDef['consoles'][number];

export const PLATFORMS: readonly PlatformDef[] = checked('platforms.json', Type.Array(PlatformSchema), platformsJson);

const SeriesSchema = Type.Object({
  name: Type.String(),
  publisher: Type.String(),
  /** The platform family the series stays on; null: it appears on every family. */
  family: Type.Union([FamilySchema, Type.Null()]),
  since: Year,
  genre: Type.String(),
});
export type Series = Static<typeof SeriesSchema>;

export const SERIES: readonly Series[] = checked('series.json', Type.Array(SeriesSchema), seriesJson);

const PublishersSchema = Type.Object({
  /** Who published and developed games up to each year (the last era has no end). */
  eras: Type.Array(Type.Object({ until: Type.Integer(), publishers: Names, developers: Names })),
  /** Publishers and studios that only ever worked for one platform family. */
  studioFamilies: Type.Record(Type.String(), FamilySchema),
  /** Each family's own publisher, which publishes a share of its games; null: none. */
  firstParty: Type.Record(FamilySchema, Type.Union([Type.String(), Type.Null()])),
  /** Publishers renamed over time: a group of names, and the name in use before each year. */
  renames: Type.Array(
    Type.Object({
      names: Names,
      eras: Type.Array(Type.Object({ before: Type.Optional(Year), name: Type.String() })),
    }),
  ),
});

export const PUBLISHERS = checked('publishers.json', PublishersSchema, publishersJson);
export type Era = (typeof PUBLISHERS.eras)[number];

export const NAME_PARTS = checked(
  'name-parts.json',
  Type.Object({
    adjectives: Names,
    nouns: Names,
    subtitles: Names,
    prefixes: WeightedNames,
    numerals: Names,
    seriesSuffixes: Names,
    genres: WeightedNames,
    gameBlurbs: Names,
  }),
  namePartsJson,
);

const AccessoryKinds = Type.Array(Type.Object({ kind: Type.String(), subCategory: Type.String() }));

export const HARDWARE = checked(
  'hardware.json',
  Type.Object({
    consoleColours: Names,
    consoleNotes: Names,
    /** Third-party accessory makers: the first year they made game accessories, and their model prefix. */
    accessoryBrands: Type.Array(Type.Object({ name: Type.String(), since: Year, modelPrefix: Type.String() })),
    homeAccessoryKinds: AccessoryKinds,
    handheldAccessoryKinds: AccessoryKinds,
  }),
  hardwareJson,
);

export const MARKETPLACE = checked(
  'marketplace.json',
  Type.Object({
    locations: Names,
    listingTitleTails: Names,
    shipping: Type.Array(Type.Number()),
    hardwareShipping: Type.Array(Type.Number()),
    carriers: WeightedNames,
  }),
  marketplaceJson,
);
