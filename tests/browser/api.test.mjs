// Unit tests of the dashboard's API client (web/static/api.js) against a stubbed fetch:
// which 401s ask for the token, and whether they say it was refused. node --test.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Api, ApiError } from '../../web/static/api.js';

// fetch answers only when the test says so, so requests can overlap a token being entered.
function stubFetch() {
  const pending = [];
  globalThis.fetch = (url, init) => new Promise((resolve) => {
    pending.push({ url, auth: init.headers.Authorization, answer: (status, body) =>
      resolve(new Response(JSON.stringify(body), { status })) });
  });
  return pending;
}

function client() {
  const asked = [];
  const api = new Api('/debug/memory', { onUnauthorized: (refused) => asked.push(refused) });
  api.token = '';  // the token store is shared by every Api in this process
  return { api, asked };
}

test('a 401 without a token asks for one; with the token sent, it says it was refused', async () => {
  const pending = stubFetch();
  const { api, asked } = client();
  const first = api.get('stats');
  pending[0].answer(401, { error: 'unauthorized' });
  await assert.rejects(first, (e) => e instanceof ApiError && e.status === 401);
  assert.deepEqual(asked, [false]);

  api.token = 'wrong';
  const second = api.get('stats');
  assert.equal(pending[1].auth, 'Bearer wrong');
  pending[1].answer(401, { error: 'unauthorized' });
  await assert.rejects(second, (e) => e.status === 401);
  assert.deepEqual(asked, [false, true]);
});

test('a 401 to a request sent before the token was entered does not ask again', async () => {
  // The refresh loop's request was in flight, tokenless, while the user typed the token:
  // its 401 says nothing about that token (asking again would hide the real answer to it).
  const pending = stubFetch();
  const { api, asked } = client();
  const inFlight = api.get('stats');
  api.token = 'entered meanwhile';
  pending[0].answer(401, { error: 'unauthorized' });
  await assert.rejects(inFlight, (e) => e.status === 401);
  assert.deepEqual(asked, []);

  const next = api.get('stats');
  assert.equal(pending[1].auth, 'Bearer entered meanwhile');
  pending[1].answer(200, { mode: 'exact' });
  assert.deepEqual(await next, { mode: 'exact' });
  assert.deepEqual(asked, []);
});

// The page reads the server's report document (liveheap/report.hpp): schema 1, or an
// answer from a server older than the field; any other schema is a one-line error.
test('reports are read as the schema the server writes', async () => {
  const pending = stubFetch();
  const { api } = client();
  const report = { schema: 1, total: { size: 10, size_diff: 10 }, stats: [{ key: 'a.cpp:1', size_diff: 10 }] };
  const good = api.report('diff');
  pending[0].answer(200, report);
  assert.deepEqual(await good, report);

  const future = api.report('diff');
  pending[1].answer(200, { ...report, schema: 2 });
  await assert.rejects(future, (e) => e instanceof ApiError && /schema is 2; this page reads schema 1/.test(e.message));

  const older = api.report('diff');
  const { schema, ...unversioned } = report;
  pending[2].answer(200, unversioned);
  assert.deepEqual(await older, unversioned);

  const notReport = api.report('diff');
  pending[3].answer(200, { total: {} });
  await assert.rejects(notReport, (e) => e instanceof ApiError && /GET diff: the report has no stats/.test(e.message));
});
