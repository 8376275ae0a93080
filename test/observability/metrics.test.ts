/** Request and meter counts are kept in maps between reads (src/observability/metrics.ts); each read shows them all, once. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metrics } from '../../src/observability/metrics.js';

const line = (text: string, name: string, labels: string) =>
  text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))?.split(' ')[1];

test('counted requests and outcomes show in every read, and are not counted twice', async () => {
  const metrics = new Metrics();
  for (let i = 0; i < 3; i++) metrics.countRequest('/developer/v1/catalogue/:id', 'GET', 200);
  metrics.countRequest('/developer/v1/catalogue/:id', 'HEAD', 200);
  metrics.countRequest('/developer/v1/catalogue/:id', 'GET', 404);
  metrics.outcome('admitted');
  metrics.outcome('admitted');
  metrics.outcome('counted');
  let text = await metrics.registry.metrics();
  assert.equal(line(text, 'shelfapi_http_requests_total', 'route="/developer/v1/catalogue/:id",method="GET",status="200"'), '3');
  assert.equal(line(text, 'shelfapi_http_requests_total', 'route="/developer/v1/catalogue/:id",method="HEAD",status="200"'), '1');
  assert.equal(line(text, 'shelfapi_http_requests_total', 'route="/developer/v1/catalogue/:id",method="GET",status="404"'), '1');
  assert.equal(line(text, 'shelfapi_meter_outcomes_total', 'outcome="admitted"'), '2');
  assert.equal(line(text, 'shelfapi_meter_outcomes_total', 'outcome="counted"'), '1');

  metrics.countRequest('/developer/v1/catalogue/:id', 'GET', 200);
  metrics.outcome('counted');
  text = await metrics.registry.metrics();
  assert.equal(line(text, 'shelfapi_http_requests_total', 'route="/developer/v1/catalogue/:id",method="GET",status="200"'), '4');
  assert.equal(line(text, 'shelfapi_meter_outcomes_total', 'outcome="admitted"'), '2', 'a second read adds nothing new');
  assert.equal(line(text, 'shelfapi_meter_outcomes_total', 'outcome="counted"'), '2');
  assert.equal((await metrics.requests.get()).values.reduce((sum, v) => sum + v.value, 0), 6, "the counter's own get sees them too");
});
