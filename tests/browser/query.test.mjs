// Unit tests of the dashboard's copy of the server's request model (web/static/query.js):
// the same parameters in the same order as the server's list (src/report/report_query.cpp),
// and queries written as the server's to_query() writes them. node --test.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PARAMETERS, toQuery } from '../../web/static/query.js';

test('the page takes the parameters the server defines, in its order', () => {
  const source = readFileSync(new URL('../../src/report/report_query.cpp', import.meta.url), 'utf8');
  const server = [...source.matchAll(/ParamName\{"([a-z_]+)"/g)].map((m) => m[1]);
  assert.ok(server.length > 10, `the server's list was found: ${server}`);
  assert.deepEqual(PARAMETERS, server);
});

test('a query says each parameter that is not its default, once, in the server\'s order', () => {
  assert.equal(toQuery({ pid: 'port', limit: 10, key: 'line', format: 'json' }), 'format=json');
  assert.equal(toQuery({ pid: 4242, include: 'leak stories*.cpp', limit: '50', key: 'traceback', format: 'json' }),
    'format=json&key=traceback&limit=50&include=leak+stories*.cpp&pid=4242');
  assert.equal(toQuery({ include: ['a', 'b'], exclude: '' }), 'include=a&include=b');
  assert.equal(toQuery({ pid: 'all', limit: 0 }), 'limit=0&pid=all');  // the server says why 0 will not do
  assert.throws(() => toQuery({ refresh: 500 }), /no parameter refresh/);
});
