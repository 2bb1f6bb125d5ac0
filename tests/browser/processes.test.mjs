// The dashboard's process picker in headless Chromium, against a prefork server in
// miniature (prefork_truth: a master whose forked workers keep known bytes at one line)
// under the preload library: the picker lists the master and its workers; choosing a
// worker shows that worker's bytes at its line exactly, "all" shows the sum, and the
// holder of the port shows none of them. Saves screenshots in $SCREENSHOT_DIR.
//
// Usage: PREFORK_TRUTH=... PRELOAD_LIBRARY=... node processes.test.mjs
// Exits 77 (ctest: skipped) when chromium or node_modules are missing, unless CI is set.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Target } from './target.mjs';
import { countRequests, until } from './until.mjs';
import { CHROMIUM, requireChromium } from './chromium.mjs';
import { formatSize as fmt } from '../../web/static/format.js';

const PROGRAM = process.env.PREFORK_TRUTH;
const PRELOAD = process.env.PRELOAD_LIBRARY;
const SHOTS = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'liveheap-browser-screenshots');

const chromium = await requireChromium(!PROGRAM || !existsSync(PROGRAM) || !PRELOAD || !existsSync(PRELOAD)
  ? `prefork_truth or the preload library not found (PREFORK_TRUTH=${PROGRAM}, PRELOAD_LIBRARY=${PRELOAD})` : null);
mkdirSync(SHOTS, { recursive: true });

const freePort = () => new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

// [size, sizeDiff, count, countDiff] of the row for `where` ("prefork_truth.cpp:33"), or null.
const rowOf = (page, where) => page.evaluate((w) => {
  const tr = [...document.querySelectorAll('tr.site')].find((r) => r.querySelector('.site-main')?.textContent === w);
  return tr ? ['.size', '.size-diff', '.count', '.count-diff'].map((c) => tr.querySelector(c)?.textContent) : null;
}, where);
const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const text = (page, selector) => page.evaluate((s) => document.querySelector(s)?.innerText ?? '', selector);

test('the process picker of a prefork server', { timeout: 120000 }, async (t) => {
  const port = await freePort();
  const registry = mkdtempSync(join(tmpdir(), 'lhb-'));
  const master = new Target(PROGRAM, ['2'], {
    ...process.env, LD_PRELOAD: PRELOAD, LIVEHEAP_ADDR: `127.0.0.1:${port}`, LIVEHEAP_MODE: 'exact', XDG_RUNTIME_DIR: registry,
  });
  const masterPid = Number((await master.expect(/^MASTER (\d+)$/))[1]);
  const workers = [];
  for (let k = 0; k < 2; ++k) workers.push(Number((await master.expect(/^WORKER \d (\d+)$/))[1]));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(async () => {
    await browser.close();
    for (const pid of workers) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    await master.kill();
    rmSync(registry, { recursive: true, force: true });
  });
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`http://127.0.0.1:${port}/debug/memory/#refresh=500`);

  await t.test('the picker lists the master and its workers', async () => {
    await until('three processes in the picker', async () => {
      const values = await page.evaluate(() => [...document.querySelectorAll('#pid option')].map((o) => o.value));
      return values.length === 4 || values;
    });
    assert.equal(await page.locator('#picker').isVisible(), true);
    const options = await page.evaluate(() => [...document.querySelectorAll('#pid option')].map((o) => [o.value, o.textContent]));
    assert.deepEqual(options.map(([v]) => v), ['all', '', String(workers[0]), String(workers[1])]);
    assert.match(options[0][1], /^all 3 processes, merged$/);
    assert.match(options[1][1], new RegExp(`^pid ${masterPid} \\(port\\) · exact · .* traced · .*prefork_truth 2$`));
    for (const [k, pid] of workers.entries()) assert.match(options[k + 2][1], new RegExp(`^pid ${pid} · exact · .* traced · .*prefork_truth 2$`));
    assert.equal(await page.locator('#pid').inputValue(), '', 'the holder of the port by default');
    await shot(page, 'processes-01-picker');
  });

  let where;
  await t.test("choosing a worker shows that worker's line exactly", async () => {
    await page.selectOption('#pid', String(workers[1]));
    await until("the worker's first-look baseline", async () => /no baseline yet, so this page took one/.test(await text(page, '#notice')) &&
      (await fetch(`http://127.0.0.1:${port}/debug/memory/baseline?pid=${workers[1]}`)).status === 200);
    assert.match(page.url(), new RegExp(`#.*pid=${workers[1]}`));
    master.child.stdin.write('go\n');
    const kept = [await master.expect(/^KEPT (\d+) (\S+) (\d+) 3$/), await master.expect(/^KEPT (\d+) (\S+) (\d+) 3$/)];
    where = kept[0][2].replace(/^.*\//, '');
    const bytes = Number(kept.find((m) => Number(m[1]) === workers[1])[3]);
    assert.equal(bytes, 6000);  // worker 1 keeps 3 x 2000 B
    await until(`${where} in worker ${workers[1]}`, async () => {
      const row = await rowOf(page, where);
      return JSON.stringify(row) === JSON.stringify([fmt(6000), fmt(6000, true), '3', '+3']) || row;
    });
    await shot(page, 'processes-02-worker');
  });

  await t.test('all processes merged: the sum of the workers', async () => {
    await page.selectOption('#pid', 'all');
    // Worker 0 and the master have no baseline yet: the page says they are not in the sum.
    await until('the missing baselines said', async () => /Not in the sum: .*no baseline yet/.test(await text(page, '#notice')));
    await page.click('#btn-baseline');  // every process's baseline: growth from here is 0
    await until('the baselines taken', async () => /^Baseline set at/.test(await text(page, '#notice')));
    master.child.stdin.write('go\n');  // each worker keeps its blocks again (replacing the old pointers' slots)
    await master.expect(/^KEPT/); await master.expect(/^KEPT/);
    await until(`${where} merged`, async () => {
      const row = await rowOf(page, where);
      return (row?.[1] === fmt(9000, true) && row?.[3] === '+6') || row;
    });
    assert.match(page.url(), /#.*pid=all/);
    assert.match(await text(page, '#card-heap-peak'), /^sum of 3 processes$/);
    await shot(page, 'processes-03-all');
  });

  await t.test('the holder of the port shows none of the workers\' bytes', async () => {
    await page.selectOption('#pid', '');
    await until('the holder', async () => (await page.locator('#pid').inputValue()) === '' && !page.url().includes('pid='));
    // A whole refresh for the holder, drawn: every refresh that begins from here is its.
    const refreshes = countRequests(page, 'processes');
    await until('a whole refresh for the holder', async () => refreshes.count >= 2 || refreshes.count);
    refreshes.stop();
    assert.equal(await rowOf(page, where), null);
    assert.deepEqual(problems, []);
  });
});
