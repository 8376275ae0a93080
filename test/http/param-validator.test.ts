// The parameter validator reads the routes' TypeBox schemas with the contract's rules. A keyword it does not
// implement would pass any value (a boolean parameter took `flag=banana`), so it refuses, when the routes
// are built, any schema it cannot check in full: the server does not start with a check it cannot make.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type, type TSchema } from 'typebox';
import { paramValidatorCompiler } from '../../src/http/api/param-validator.js';
import { Limit, Search, Upc } from '../../src/http/api/schemas.js';

function compile(schema: TSchema, httpPart: 'querystring' | 'params' = 'querystring') {
  return paramValidatorCompiler({ schema, method: 'GET', url: '/test', httpPart });
}

describe('schemas the validator cannot check are refused at start-up', () => {
  const refused: Array<[string, TSchema]> = [
    ['a boolean', Type.Object({ flag: Type.Optional(Type.Boolean()) })],
    ['a union of literals', Type.Object({ sort: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])) })],
    ['an enum', Type.Object({ sort: Type.Optional(Type.Enum({ asc: 'asc', desc: 'desc' })) })],
    ['a literal', Type.Object({ sort: Type.Optional(Type.Literal('asc')) })],
    ['a number', Type.Object({ min: Type.Optional(Type.Number()) })],
    ['an array', Type.Object({ ids: Type.Optional(Type.Array(Type.String())) })],
    ['a string format', Type.Object({ since: Type.Optional(Type.String({ format: 'date-time' })) })],
    ['exclusive bounds on an integer', Type.Object({ n: Type.Optional(Type.Integer({ exclusiveMinimum: 0 })) })],
    ['a multipleOf on an integer', Type.Object({ n: Type.Optional(Type.Integer({ multipleOf: 5 })) })],
    ['a required query parameter (never enforced)', Type.Object({ q: Type.String({ minLength: 1 }) })],
    ['an object that allows extra properties', Type.Object({ q: Type.Optional(Type.String({ minLength: 1 })) }, { additionalProperties: true })],
    ['a property of no type', Type.Object({ q: Type.Optional(Type.Any()) })],
  ];
  for (const [label, schema] of refused) {
    it(`refuses ${label}`, () => {
      assert.throws(() => compile(schema), /cannot check/);
    });
  }

  it('accepts what the routes use: integers with bounds and defaults, strings with lengths and a pattern', () => {
    const check = compile(
      Type.Object({ limit: Type.Optional(Limit), search: Type.Optional(Search), upc: Type.Optional(Upc) }, { additionalProperties: false }),
    );
    assert.deepEqual(check({ limit: '5', search: 'zelda' }), { value: { limit: 5, search: 'zelda' } });
    const params = compile(Type.Object({ id: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }), 'params');
    assert.deepEqual(params({ id: '7' }), { value: { id: 7 } });
  });
});
