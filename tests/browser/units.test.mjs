// Unit tests of the dashboard's pure modules (size formatting, history, verdict display):
// node --test. The verdict rule itself is the server's (tests/report/verdict_test.cpp).
import test from 'node:test';
import assert from 'node:assert/strict';
import { formatSize, formatCount, formatCap } from '../../web/static/format.js';
import { History, fromServer } from '../../web/static/history.js';
import { VERDICTS, verdictTitle, verdictWhy } from '../../web/static/table.js';
import { foldIdle, sparkline } from '../../web/static/charts.js';
import { groupName, pickerOptions, processLabel, shortCommand } from '../../web/static/processes.js';

const KiB = 1024;
const MiB = 1024 * KiB;

test('sizes read like tracemalloc', () => {
  const cases = [
    [0, false, '0 B'], [0, true, '+0 B'], [1023, false, '1023 B'], [10239, false, '10239 B'],
    [10240, false, '10.0 KiB'], [-10240, true, '-10.0 KiB'], [500 * KiB, true, '+500 KiB'],
    [99.95 * KiB, false, '100.0 KiB'], [320 * KiB, false, '320 KiB'], [2.5 * KiB, false, '2560 B'],
    [38.5 * MiB, false, '38.5 MiB'], [25.6 * MiB, true, '+25.6 MiB'], [6.4 * MiB, false, '6554 KiB'],
    [12.25 * MiB, false, '12.2 MiB'], [12.75 * MiB, false, '12.8 MiB'], [3 * 1024 * MiB, false, '3072 MiB'],
    [200 * 1024 * MiB, false, '200 GiB'],
  ];
  for (const [bytes, signed, text] of cases) assert.equal(formatSize(bytes, signed), text, `${bytes}`);
  assert.equal(formatSize(undefined), '–');
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatCount(4, true), '+4');
  assert.equal(formatCount(-4, true), '-4');
});

test('history keeps a capped series per key and forgets the least recently seen', () => {
  const h = new History({ maxSamples: 3, maxKeys: 2 });
  for (let t = 0; t < 5; t++) h.record(t, [['a', t * 10]]);
  assert.deepEqual(h.values('a'), [20, 30, 40]);
  h.record(5, [['b', 1]]);
  h.record(6, [['c', 2]]);
  assert.deepEqual(h.values('a'), []);
  assert.deepEqual(h.values('c'), [2]);
  h.clear();
  assert.deepEqual(h.values('c'), []);
});

test("a process's label names its program, however deep the directory it runs from", () => {
  const deep = `/${'very-long-directory/'.repeat(6)}prefork_truth 2`;
  assert.equal(shortCommand(deep), 'prefork_truth 2');
  assert.equal(shortCommand('gunicorn: worker [app:app]'), 'gunicorn: worker [app:app]');
  assert.equal(shortCommand('python3 /srv/app/main.py --port 1'), 'python3 /srv/app/main.py --port 1');
  assert.equal(shortCommand(''), '');
  assert.equal(processLabel({ pid: 7, mode: 'exact', traced: 4952, cmdline: deep }, 7), 'pid 7 (port) · exact · 4952 B traced · prefork_truth 2');
  assert.match(processLabel({ pid: 8, mode: 'sampled', cmdline: `/bin/${'x'.repeat(80)}` }, 7), /^pid 8 · sampled · x{47}…$/);
});

test("the server's history becomes the charts' series", () => {
  const answer = {
    interval_s: 2, key: 'line',
    points: [
      { t_ms: 1000, traced: 10, peak: 12, rss: 100, stacks_dropped: 0, bytes_dropped: 0 },
      { t_ms: 3000, traced: 20, peak: 22, rss: -1, stacks_dropped: 0, bytes_dropped: 0 },
    ],
    stats: [{ key: 'a.cpp:1', series: [[1000, 5, 1], [3000, 7, 2]], verdict: 'unknown' }, { key: 'b.cpp:2' }],
  };
  const s = fromServer(answer, (stat) => `id:${stat.key}`);
  assert.equal(s.intervalMs, 2000);
  assert.equal(s.points, 2);
  assert.deepEqual(s.memory.heap, [{ t: 1000, v: 10 }, { t: 3000, v: 20 }]);
  assert.deepEqual(s.memory.peak, [{ t: 1000, v: 12 }, { t: 3000, v: 22 }]);
  assert.deepEqual(s.memory.rss, [{ t: 1000, v: 100 }], 'an unknown RSS (-1) is no point');
  assert.deepEqual(s.sites.get('id:a.cpp:1'), [{ t: 1000, v: 5, idle: false }, { t: 3000, v: 7, idle: false }]);
  assert.deepEqual(s.sites.get('id:b.cpp:2'), []);
  // No answer (an older server) or history off: no interval, so the page uses its own polls.
  for (const none of [null, { interval_s: 0, points: [], stats: [] }, { interval_s: 'x' }]) {
    const empty = fromServer(none, (stat) => stat.key);
    assert.equal(empty.intervalMs, 0);
    assert.equal(empty.points, 0);
    assert.equal(empty.sites.size, 0);
  }
});

test("verdicts are shown as the server says them, with its numbers", () => {
  assert.deepEqual(VERDICTS, ['growing', 'plateaued', 'stable', 'shrinking', 'unknown'], "the server's words (src/report/verdict.cpp)");
  assert.match(verdictTitle({ verdict: 'growing', growth_per_min: 61440, since_last_growth_s: 0.4 }, 'growing'),
    /^The server's history: keeps rising.* \(\+60\.0 KiB\/min, last grew 0 s ago\)$/);
  // While unknown the server sends null numbers: only the explanation.
  assert.match(verdictTitle({ verdict: 'unknown', growth_per_min: null, since_last_growth_s: null }, 'unknown'), /shorter than 5 points/);
  assert.doesNotMatch(verdictTitle({ growth_per_min: null }, 'unknown'), /min/);
});

test("the server's idle points are folded out of a sparkline: it is drawn against the work", () => {
  const answer = {
    interval_s: 1, key: 'line',
    points: [0, 1, 2, 3, 4, 5].map((i) => ({ t_ms: 1000 * i, traced: 0, peak: 0, rss: 0, idle: i >= 3 })),
    stats: [{ key: 'leak.cpp:9', series: [[0, 10, 1], [1000, 20, 2], [2000, 30, 3], [3000, 30, 3], [4000, 30, 3], [5000, 30, 3]] }],
  };
  const points = fromServer(answer, (stat) => stat.key).sites.get('leak.cpp:9');
  assert.deepEqual(points.map((p) => p.idle), [false, false, false, true, true, true]);
  const { kept, folds } = foldIdle(points);
  assert.deepEqual(kept.map((p) => p.v), [10, 20, 30], 'the idle stretch is no flat evidence');
  assert.deepEqual(folds, [], 'nothing after the fold: no mark');
  // Work after an idle stretch: the fold is marked between the points around it.
  const resumed = [...points, { t: 6000, v: 40, idle: false }];
  assert.deepEqual(foldIdle(resumed).kept.map((p) => p.v), [10, 20, 30, 40]);
  assert.deepEqual(foldIdle(resumed).folds, [2]);
  assert.match(sparkline(resumed, { verdict: 'growing' }), /class="spark-idle"/);
  // What changed while idle (a free) still shows at the end.
  const freed = [...points.slice(0, 5), { t: 5000, v: 0, idle: true }];
  assert.deepEqual(foldIdle(freed).kept.map((p) => p.v), [10, 20, 30, 0]);
});

test("the verdict's reasons read as the server's text says them", () => {
  assert.equal(verdictWhy({ verdict: 'growing', retention: 1, idle_s: 620.4 }), 'retains 100%, idle 620 s');
  assert.equal(verdictWhy({ verdict: 'plateaued', retention: 0.002, idle_s: 0 }), 'retains <1%, idle 0 s');
  assert.equal(verdictWhy({ verdict: 'stable', retention: null, idle_s: null }), 'allocated nothing');
  assert.equal(verdictWhy({ verdict: 'unknown', growth_per_min: null }), '', 'an older server: nothing to say');
  assert.match(verdictTitle({ verdict: 'growing', growth_per_min: 61440, since_last_growth_s: 3, retention: 1, idle_s: 620 }, 'growing'),
    /keeps rising .* It retains 100% of what it allocated over the history, last allocated 620 s ago\. \(\+60\.0 KiB\/min, last grew 3 s ago\)$/);
});

test('the tracker-memory cap is said once reached, as the text reports say it', () => {
  assert.equal(formatCap(undefined), '');
  assert.equal(formatCap({ max_bytes: 24 * MiB, reached: false, folded_blocks: 0, folded_bytes: 0,
    dropped_blocks: 0, dropped_bytes: 0 }), '');
  assert.equal(formatCap({ max_bytes: 24 * MiB, reached: true, folded_blocks: 121332,
    folded_bytes: 7765248, dropped_blocks: 0, dropped_bytes: 0 }),
  'cap 24.0 MiB reached: 121,332 folded (7583 KiB), 0 dropped (0 B)');
});

test('a program of several processes is named as one, and read merged first', () => {
  const master = { pid: 10, ppid: 1, cmdline: 'gunicorn: master [app:app]' };
  const workers = [{ pid: 11, ppid: 10, cmdline: 'gunicorn: worker [app:app]' }, { pid: 12, ppid: 10, cmdline: 'gunicorn: worker [app:app]' }];
  assert.equal(groupName([master, ...workers], 10), '2 workers + master');
  assert.equal(groupName([master, workers[0]], 10), '1 worker + master');
  // A wrapper's program is not its worker, nor are processes the holder did not fork.
  assert.equal(groupName([master, { pid: 20, ppid: 5, cmdline: 'x' }], 10), '2 processes');
  assert.equal(groupName([master, ...workers], 11), '3 processes');
  const options = pickerOptions([master, ...workers], 10);
  assert.deepEqual(options.map((o) => o.value), ['all', 'port', '11', '12']);
  assert.equal(options[0].label, 'all 3 processes, merged');
});
