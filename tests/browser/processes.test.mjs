// The dashboard against a prefork server in miniature (prefork_truth: a master whose forked
// workers keep known bytes at one line) under the preload library, in headless Chromium: the
// page opens on every process merged ("2 workers + master"), shows the workers' bytes without
// touching the picker and each process's share; a worker that joins after the baseline is
// listed as new; choosing a worker shows its bytes exactly, and the holder of the port none
// of them. Saves screenshots in $SCREENSHOT_DIR.
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

// [size, sizeDiff, count, countDiff] of the row for `where` ("prefork_truth.cpp:42"), or null.
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

  await t.test('a program of several processes opens merged, named as one', async () => {
    await until('the merged view chosen by default', async () => {
      const values = await page.evaluate(() => [...document.querySelectorAll('#pid option')].map((o) => o.value));
      return (values.length === 4 && (await page.locator('#pid').inputValue()) === 'all') || values;
    });
    assert.equal(await page.locator('#picker').isVisible(), true);
    const options = await page.evaluate(() => [...document.querySelectorAll('#pid option')].map((o) => [o.value, o.textContent]));
    assert.deepEqual(options.map(([v]) => v), ['all', 'port', String(workers[0]), String(workers[1])]);
    assert.match(options[0][1], /^all 3 processes, merged$/);
    assert.match(options[1][1], new RegExp(`^pid ${masterPid} \\(port\\) · exact · .* traced · .*prefork_truth 2$`));
    for (const [k, pid] of workers.entries()) assert.match(options[k + 2][1], new RegExp(`^pid ${pid} · exact · .* traced · .*prefork_truth 2$`));
    await until('the header names the program', async () => (await text(page, '#fact-processes')) === '2 workers + master' || text(page, '#fact-processes'));
    assert.ok(!page.url().includes('pid='), 'the default is not written into the fragment');
    // First look: no process had a baseline, so the page took one in each of them.
    await until('the baselines of every process', async () => /took one in each of them/.test(await text(page, '#notice')));
  });

  let where;
  await t.test("the workers' bytes show merged without touching the picker, each worker's share in the strip", async () => {
    master.child.stdin.write('go\n');
    const kept = [await master.expect(/^KEPT (\d+) (\S+) (\d+) 3$/), await master.expect(/^KEPT (\d+) (\S+) (\d+) 3$/)];
    where = kept[0][2].replace(/^.*\//, '');
    await until(`${where} merged`, async () => {
      const row = await rowOf(page, where);
      return JSON.stringify(row) === JSON.stringify([fmt(9000), fmt(9000, true), '6', '+6']) || row;
    });
    const shares = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#process-strip .share')].map((c) => [c.dataset.pid, c.textContent])));
    assert.equal(shares[String(workers[0])], `pid ${workers[0]} ${fmt(3000, true)}`);
    assert.equal(shares[String(workers[1])], `pid ${workers[1]} ${fmt(6000, true)}`);
    assert.match(shares[String(masterPid)], new RegExp(`^pid ${masterPid} \\(port\\) `));
    assert.match(await text(page, '#card-heap-peak'), /^sum of 3 processes$/);
    await shot(page, 'processes-01-merged-by-default');
  });

  await t.test('a worker that joins after the baseline is listed as new, its whole heap counted', async () => {
    master.child.stdin.write('spawn\n');
    const joined = Number((await master.expect(/^WORKER 2 (\d+)$/))[1]);
    workers.push(joined);
    await until('the new worker in the strip', async () => {
      const chip = await page.evaluate((pid) => document.querySelector(`#process-strip .share[data-pid="${pid}"]`)?.className ?? null, String(joined));
      return (chip !== null && chip.includes('new')) || chip;
    });
    const label = await page.evaluate((pid) => document.querySelector(`#process-strip .share[data-pid="${pid}"]`).textContent, String(joined));
    assert.match(label, new RegExp(`^pid ${joined} · new \\+`));
    await until('the header counts it', async () => (await text(page, '#fact-processes')) === '3 workers + master' || text(page, '#fact-processes'));
    await shot(page, 'processes-02-respawned-worker');
  });

  await t.test("choosing a worker shows that worker's line exactly", async () => {
    await page.selectOption('#pid', String(workers[1]));
    assert.match(page.url(), new RegExp(`#.*pid=${workers[1]}`));
    await until(`${where} in worker ${workers[1]}`, async () => {
      const row = await rowOf(page, where);
      return JSON.stringify(row) === JSON.stringify([fmt(6000), fmt(6000, true), '3', '+3']) || row;
    });
    assert.equal(await text(page, '#fact-processes'), `pid ${workers[1]}, 1 of 4 processes`);
    assert.equal(await page.locator('#process-strip').isVisible(), false);
    await shot(page, 'processes-03-worker');
  });

  await t.test("the holder of the port shows none of the workers' bytes, and stays chosen on reload", async () => {
    await page.selectOption('#pid', 'port');
    await until('the holder', async () => page.url().includes('pid=port'));
    // A whole refresh for the holder, drawn: every refresh that begins from here is its.
    let refreshes = countRequests(page, 'processes');
    await until('a whole refresh for the holder', async () => refreshes.count >= 2 || refreshes.count);
    refreshes.stop();
    assert.equal(await rowOf(page, where), null);
    await page.reload();
    refreshes = countRequests(page, 'processes');
    await until('a whole refresh after the reload', async () => refreshes.count >= 2 || refreshes.count);
    refreshes.stop();
    assert.equal(await page.locator('#pid').inputValue(), 'port');
    assert.equal(await rowOf(page, where), null);
    assert.deepEqual(problems, []);
  });
});
