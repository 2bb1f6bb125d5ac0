// Unit tests of the dashboard's pure modules (verdict, size formatting, history): node --test.
import test from 'node:test';
import assert from 'node:assert/strict';
import { classify, tolerance, windowSize, MIN_SAMPLES } from '../../web/static/verdict.js';
import { formatSize, formatCount } from '../../web/static/format.js';
import { History } from '../../web/static/history.js';
import { processLabel, shortCommand } from '../../web/static/processes.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const ramp = (n, from, step) => Array.from({ length: n }, (_, i) => from + i * step);
const flat = (n, value) => Array(n).fill(value);

test('too few samples are still collecting', () => {
  assert.equal(classify([]), 'collecting');
  assert.equal(classify(ramp(MIN_SAMPLES - 1, 0, MiB)), 'collecting');
  assert.equal(classify(undefined), 'collecting');
});

test('a site that keeps rising is growing', () => {
  assert.equal(classify(ramp(6, 0, 100 * KiB)), 'growing');
  assert.equal(classify(ramp(60, 0, 6 * MiB)), 'growing');
});

test('a leak that grows in steps with quiet spells between requests stays growing', () => {
  // 6 MiB every third refresh over 30 refreshes: the window (10) spans several steps.
  const sizes = Array.from({ length: 30 }, (_, i) => Math.floor(i / 3) * 6 * MiB);
  assert.equal(classify(sizes), 'growing');
});

test('a cache that filled up and stopped is plateaued', () => {
  assert.equal(classify([...ramp(6, 0, 64 * KiB), ...flat(6, 6 * 64 * KiB)]), 'plateaued');
  // Warmed up long ago and flat since: still plateaued while the rise is in the history.
  assert.equal(classify([...ramp(10, 0, MiB), ...flat(40, 10 * MiB)]), 'plateaued');
});

test('a cache still filling is growing, not plateaued', () => {
  assert.equal(classify([...flat(5, 0), ...ramp(5, 0, 64 * KiB)]), 'growing');
});

test('flat from the start is stable, and so is small noise', () => {
  assert.equal(classify(flat(10, 5 * MiB)), 'stable');
  const wobble = [5, 5.01, 4.99, 5.02, 4.98, 5.0, 5.01, 4.99].map((m) => m * MiB);
  assert.equal(classify(wobble), 'stable');
});

test('a site that is being freed is shrinking', () => {
  assert.equal(classify(ramp(8, 10 * MiB, -MiB)), 'shrinking');
});

test('sampled-mode noise below the sampling interval is not a trend', () => {
  // Estimates jump by one 512 KiB sample either way around a flat 2 MiB.
  const noisy = [2, 2.5, 2, 1.5, 2, 2.5, 2, 2, 1.5, 2].map((m) => m * MiB);
  assert.equal(classify(noisy, { noise: 512 * KiB }), 'stable');
  assert.equal(classify(ramp(10, 0, MiB), { noise: 512 * KiB }), 'growing');
});

test('thresholds: window grows with the session within its bounds', () => {
  assert.equal(windowSize(5), 4);
  assert.equal(windowSize(30), 10);
  assert.equal(windowSize(600), 20);
  assert.equal(tolerance([0, 0]), 64);
  assert.equal(tolerance([0, 100 * MiB]), MiB);
  assert.equal(tolerance([0, 1], 512 * KiB), 512 * KiB);
});

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
