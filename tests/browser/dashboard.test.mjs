// The dashboard in headless Chromium (Debian's /usr/bin/chromium via playwright-core) against
// leak_target, a real program with two known leaks: the page must name them with the right
// sizes, open their tracebacks, draw them in the flame graph (exact sizes, widths by share,
// zoom), reset growth on "Set baseline", show the server's verdicts (the leak growing, the
// capped cache plateaued) and its history the moment it opens, and survive bad input, a
// restart and a token. It saves a screenshot of each state in $SCREENSHOT_DIR for a person
// to look at.
//
// Usage: LEAK_TARGET=build/tests/browser/leak_target node dashboard.test.mjs
// Exits 77 (ctest: skipped) when chromium or node_modules are missing, unless CI is set.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Target, leakLines } from './target.mjs';
import { countRequests, until } from './until.mjs';
import { CHROMIUM, requireChromium } from './chromium.mjs';
import { formatSize as fmt } from '../../web/static/format.js';

const PROGRAM = process.env.LEAK_TARGET ?? process.argv[2];
const SHOTS = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'liveheap-browser-screenshots');
const KiB = 1024;
// The shortest history interval LIVEHEAP_HISTORY_INTERVAL takes (whole seconds, 0 is off):
// the server's verdicts need 5 points.
const HISTORY = { LIVEHEAP_HISTORY_INTERVAL: '1' };

const chromium = await requireChromium(!PROGRAM || !existsSync(PROGRAM) ? `leak_target not found (LEAK_TARGET=${PROGRAM})` : null);
mkdirSync(SHOTS, { recursive: true });

const LINES = leakLines();
// Sizes as tracemalloc prints them: what leak_target's ticks must add up to.
const growSize = (ticks) => ticks * 100 * KiB;
const cacheSize = (ticks) => Math.min(ticks, 12) * 64 * KiB;

// The text of each cell of the row for leak_target.cpp:<line>, or null when absent.
async function rowOf(page, line) {
  return page.evaluate((where) => {
    const tr = [...document.querySelectorAll('tr.site')].find((r) => r.querySelector('.site-main')?.textContent === where);
    if (!tr) return null;
    const text = (cls) => tr.querySelector(cls)?.textContent;
    return {
      rank: text('.rank'), size: text('.size'), sizeDiff: text('.size-diff'), count: text('.count'),
      countDiff: text('.count-diff'), average: text('.average'), verdict: text('.verdict'),
      bar: parseFloat(tr.querySelector('.bar')?.style.width ?? '0'),
      sparkPoints: tr.querySelector('.spark-line')?.getAttribute('points')?.split(' ').length ?? 0,
      // Every point of the row's series, idle ones too (the sparkline folds those away).
      sparkSeries: Number(tr.querySelector('.spark')?.dataset.points ?? 0),
    };
  }, `leak_target.cpp:${line}`);
}

// The flame graph's frames of one full name (their tooltip's first line), or the root for
// null: each one's box in SVG units and on screen, its label, tooltip and classes.
async function flameFrames(page, name) {
  return page.evaluate((full) => {
    const frames = [...document.querySelectorAll('#flame .flame-frame')];
    return frames.filter((g) => (full === null ? g.dataset.path === '[]'
      : g.querySelector('title')?.textContent.split('\n')[0] === full)).map((g) => {
      const rect = g.querySelector('rect');
      const box = rect.getBoundingClientRect();
      const num = (n) => Number(rect.getAttribute(n));
      return {
        x: num('x'), y: num('y'), width: num('width'), label: g.querySelector('text')?.textContent ?? '',
        title: g.querySelector('title').textContent, cls: g.getAttribute('class'), weight: Number(g.dataset.weight),
        fill: getComputedStyle(rect).fill, svgWidth: Number(g.ownerSVGElement.getAttribute('width')),
        centre: [box.left + box.width / 2, box.top + box.height / 2],
      };
    });
  }, name);
}
// The first of them, or null.
const flameFrame = async (page, name) => (await flameFrames(page, name))[0] ?? null;

// A real click in the middle of a flame graph frame.
async function clickFrame(page, name) {
  await page.locator('#flame').scrollIntoViewIfNeeded();
  const frame = await flameFrame(page, name);
  assert.ok(frame, `${name ?? 'the root'} is drawn`);
  await page.mouse.click(...frame.centre);
}

const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
// '' for a missing element, at once (a locator would wait 30 s for it).
const text = (page, selector) => page.evaluate((s) => document.querySelector(s)?.innerText ?? '', selector);

test('the dashboard against a program with known leaks', { timeout: 240000 }, async (t) => {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  let target = await Target.start(PROGRAM, ['--paused', '--tick-ms', '150'], HISTORY);
  // Left to run from now on, unwatched: the last step opens a page on it once it has a history.
  const veteran = await Target.start(PROGRAM, ['--tick-ms', '300'], HISTORY);
  const veteranStarted = Date.now();
  t.after(async () => { await browser.close(); await target.kill(); await veteran.kill(); });

  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
  const open = (port) => page.goto(`http://127.0.0.1:${port}/debug/memory/#refresh=500`);

  await t.test('first open takes a baseline and says so; mode shown plainly', async () => {
    await open(target.port);
    await until('the first-look notice', async () => /no baseline yet, so this page took one/.test(await text(page, '#notice')));
    assert.match(await text(page, '#fact-mode'), /mode: exact/);
    assert.match(await text(page, '#fact-tracing'), /tracking: on/);
    assert.equal(await page.locator('#error').isHidden(), true);
    await shot(page, '01-first-open');
  });

  await t.test('the leaking callsites show with the right sizes', async () => {
    const ticks = await target.send('tick 5');
    assert.equal(ticks, 5);
    await until('both leaks at their sizes', async () => {
      const grow = await rowOf(page, LINES.grow);
      const cache = await rowOf(page, LINES.cache);
      return grow?.size === fmt(growSize(5)) && cache?.size === fmt(cacheSize(5)) ? true : { grow, cache };
    });
    const grow = await rowOf(page, LINES.grow);
    const cache = await rowOf(page, LINES.cache);
    assert.deepEqual([grow.size, grow.sizeDiff, grow.count, grow.countDiff, grow.average],
      ['500 KiB', '+500 KiB', '5', '+5', '100 KiB']);
    assert.deepEqual([cache.size, cache.sizeDiff, cache.count, cache.countDiff, cache.average],
      ['320 KiB', '+320 KiB', '5', '+5', '64.0 KiB']);
    assert.equal(grow.rank, '1', 'the biggest growth comes first');
    assert.equal(cache.rank, '2');
    assert.equal(grow.bar, 100);
    assert.ok(Math.abs(cache.bar - 64) < 1, `cache bar ${cache.bar}% of the biggest`);
    await shot(page, '02-two-leaks');
  });

  await t.test('the flame graph: growth by stack, exact sizes, widths by share, click to zoom', async () => {
    // The state of the test above: 5 ticks since the baseline, the target paused.
    const LEAK = 'leak_request_buffer()';
    const CACHE = 'fill_shape_cache()';
    const TICK = 'tick(bool)';
    await until('both leaks in the flame graph', async () => {
      const [leak, cache] = [await flameFrame(page, LEAK), await flameFrame(page, CACHE)];
      return /\(\+512,000 B\)/.test(leak?.title) && /\(\+327,680 B\)/.test(cache?.title) ? true : { leak, cache };
    });
    await page.locator('#flame-panel').scrollIntoViewIfNeeded();
    await page.locator('#flame-panel').screenshot({ path: join(SHOTS, '02b-flame.png') });
    const leak = await flameFrame(page, LEAK);
    const cache = await flameFrame(page, CACHE);
    const tick = await flameFrame(page, TICK);
    const root = await flameFrame(page, null);
    const main = await flameFrame(page, 'main');
    // The exact size in the tooltip, the short name and the size in the label, the line.
    assert.equal(leak.title.split('\n')[2], '+500 KiB (+512,000 B) since the baseline, +5 blocks');
    assert.equal(leak.label, 'leak_request_buffer +500 KiB');
    assert.equal(cache.label, 'fill_shape_cache +320 KiB');
    assert.match(leak.title, new RegExp(`leak_target\\.cpp:${LINES.grow}\\b`));
    assert.match(root.label, /^all stacks \+/);
    // Icicle: root on top, each callee one row below its caller.
    assert.equal(root.y, 0);
    assert.equal(leak.y, tick.y + 20);
    assert.equal(cache.y, leak.y);
    assert.ok(main && main.y < tick.y && tick.y > 0, 'main above tick');
    // Widths: proportional to the bytes changed; a caller is as wide as its callees.
    assert.equal(root.width, root.svgWidth);
    assert.ok(Math.abs(leak.width / cache.width - 500 / 320) < 0.005, `leak ${leak.width} px, cache ${cache.width} px`);
    assert.ok(Math.abs(tick.width - (leak.width + cache.width)) < 0.02, `tick ${tick.width} px`);
    assert.ok(Math.abs(leak.width - (root.width * 512000) / root.weight) < 0.01, `leak share of ${root.weight} B`);
    assert.ok(root.weight >= 512000 + 327680 && root.weight < (512000 + 327680) * 1.05, `root ${root.weight} B: the leaks dominate`);
    assert.equal(leak.x, tick.x, 'the biggest callee first');
    // The table's colours: growth is the red of its Δ Size column.
    const tableRed = await page.evaluate(() => getComputedStyle(document.querySelector('.size-diff.up')).color);
    assert.equal(leak.fill, tableRed);
    assert.match(leak.cls, /\bup\b/);

    // Click tick: it spans the width, its callees keep their shares of it.
    await clickFrame(page, TICK);
    await until('tick zoomed', async () => (await flameFrame(page, TICK))?.width === root.svgWidth);
    const zoomed = await flameFrame(page, LEAK);
    assert.ok(Math.abs(zoomed.width - (root.svgWidth * 500) / 820) < 0.02, `zoomed leak ${zoomed.width} px`);
    assert.equal((await flameFrame(page, CACHE)).x, zoomed.width);
    assert.match(await text(page, '#flame-crumbs'), /^all stacks › .* › tick$/);
    assert.match((await flameFrame(page, 'main')).cls, /\bancestor\b/, 'callers stay above, to zoom out to');
    await page.locator('#flame-panel').screenshot({ path: join(SHOTS, '02c-flame-zoomed.png') });
    // Click the leak: it alone, full width.
    await clickFrame(page, LEAK);
    await until('the leak zoomed', async () => (await flameFrame(page, LEAK))?.width === root.svgWidth);
    assert.equal(await flameFrame(page, CACHE), null);
    // Zoom out: a caller above, then the path's root.
    await clickFrame(page, TICK);
    await until('back to tick', async () => (await flameFrame(page, CACHE)) !== null && (await flameFrame(page, TICK)).width === root.svgWidth);
    await page.locator('#flame-crumbs button', { hasText: 'all stacks' }).click();
    await until('zoomed out', async () => Math.abs((await flameFrame(page, TICK)).width - tick.width) < 0.02);
    assert.equal(await text(page, '#flame-crumbs'), 'all stacks');
  });

  await t.test('a click opens the whole traceback, symbolized', async () => {
    await page.locator('tr.site', { hasText: `leak_target.cpp:${LINES.grow}` }).click();
    const detail = page.locator('tr.detail');
    await until('the traceback', async () => /leak_request_buffer/.test(await detail.innerText()));
    const frames = await detail.locator('.frame').allInnerTexts();
    const own = frames.find((f) => f.includes(`leak_target.cpp:${LINES.grow}`));
    assert.ok(own && own.includes('leak_request_buffer'), `a frame names the leak: ${frames.join(' | ')}`);
    // Short names (as pprof shortens them), the full one on hover.
    const ownName = detail.locator('.frame', { hasText: `leak_target.cpp:${LINES.grow}` }).first().locator('.fn');
    assert.equal(await ownName.innerText(), 'leak_request_buffer');
    assert.equal(await ownName.getAttribute('title'), 'leak_request_buffer()');
    const names = await detail.locator('.frame .fn').allInnerTexts();
    assert.ok(names.every((n) => !/\(.*(unsigned|const|\*)/.test(n)), `no parameter lists: ${names.join(' | ')}`);
    assert.ok(frames.some((f) => /\bmain\b/.test(f)), 'the stack reaches main');
    assert.ok(frames.some((f) => f.trim().endsWith('leak_target')), `the module is named: ${frames.join(' | ')}`);
    assert.equal(await detail.locator('.frame.mark').count() >= 1, true, 'the callsite frame is highlighted');
    // Two more refreshes (the target is paused: its history keeps the idle stretch as one
    // point, so only the refreshes tell the page moved on): the traceback stays open.
    const refreshes = countRequests(page, 'history');
    await until('two more refreshes', async () => refreshes.count >= 3);
    refreshes.stop();
    assert.equal(await detail.count(), 1);
    await shot(page, '03-traceback');
    await page.locator('tr.site', { hasText: `leak_target.cpp:${LINES.grow}` }).click();
    assert.equal(await page.locator('tr.detail').count(), 0);
  });

  await t.test('a growing site is labelled growing and a capped cache plateaued', async () => {
    await target.send('resume');
    // The verdicts and the sparkline's points come from the server's history; on a loaded
    // machine the page may read the verdicts a refresh before it has drawn five points.
    await until('growing and plateaued verdicts, five points drawn', async () => {
      const grow = await rowOf(page, LINES.grow);
      const cache = await rowOf(page, LINES.cache);
      return grow?.verdict === 'growing' && cache?.verdict === 'plateaued' && grow.sparkPoints >= 5
        ? true : [grow?.verdict, cache?.verdict, grow?.sparkPoints];
    }, 60000);
    assert.equal((await rowOf(page, LINES.cache)).size, fmt(cacheSize(12)), 'the cache stops at its capacity');
    await shot(page, '04-verdicts');
  });

  await t.test('"Set baseline" resets growth to zero', async () => {
    const ticks = await target.send('pause');
    await page.click('#btn-baseline');
    await until('zero growth', async () => {
      const grow = await rowOf(page, LINES.grow);
      const cache = await rowOf(page, LINES.cache);
      return grow?.sizeDiff === '+0 B' && grow?.countDiff === '+0' && cache?.sizeDiff === '+0 B' ? true : { grow, cache };
    });
    const grow = await rowOf(page, LINES.grow);
    assert.equal(grow.size, fmt(growSize(ticks)), 'size stays, only growth resets');
    assert.match(await text(page, '#notice'), /Baseline set at/);
    await shot(page, '05-baseline-reset');
  });

  await t.test('the flame graph: shrinkage green, growth red, each as wide as its bytes', async () => {
    // Since the baseline above: the timer thread's two latest buffers freed, one more from main.
    await target.send('free 2');
    await target.send('tick 1');
    const LEAK = 'leak_request_buffer()';
    const sides = async () => {
      const frames = await flameFrames(page, LEAK);
      return [frames.find((f) => /\bup\b/.test(f.cls)), frames.find((f) => /\bdown\b/.test(f.cls)), frames];
    };
    await until('growth and shrinkage in the flame graph', async () => {
      const [up, down, frames] = await sides();
      return /\(\+102,400 B\)/.test(up?.title) && /\(-204,800 B\)/.test(down?.title) &&
        await page.locator('.size-diff.down').count() > 0 ? true : frames.map((f) => f.title);
    });
    const [up, down] = await sides();
    assert.equal(up.label, 'leak_request_buffer +100 KiB');
    assert.equal(down.label, 'leak_request_buffer -200 KiB');
    assert.ok(Math.abs(down.width / up.width - 2) < 0.005, `shrank ${down.width} px, grew ${up.width} px`);
    // The table's colours: the leak's line shrank by 100 KiB net there, in its green.
    assert.equal((await rowOf(page, LINES.grow)).sizeDiff, '-100 KiB');
    const green = await page.evaluate(() => getComputedStyle(document.querySelector('.size-diff.down')).color);
    const red = await page.evaluate(() => {  // no row grows now: the class the table's growth uses
      const probe = document.body.appendChild(Object.assign(document.createElement('span'), { className: 'size-diff up' }));
      const colour = getComputedStyle(probe).color;
      probe.remove();
      return colour;
    });
    assert.equal(down.fill, green);
    assert.equal(up.fill, red);
    assert.notEqual(red, green);
    // The root holds both sides: grew and shrank, the net in its colour.
    const root = await flameFrame(page, null);
    assert.ok(root.weight >= 3 * 102400, `root ${root.weight} B`);
    assert.match(root.title, /grew \+[\d.]+ KiB, shrank -[\d.]+ KiB/);
    await page.locator('#flame-panel').scrollIntoViewIfNeeded();
    await page.locator('#flame-panel').screenshot({ path: join(SHOTS, '05b-flame-shrink.png') });
  });

  await t.test('the flame graph hides, and then asks the server for no stacks', async () => {
    const asked = [];
    const count = (request) => { if (/[?&]key=traceback/.test(request.url())) asked.push(request.url()); };
    await page.click('#btn-flame');
    assert.equal(await page.locator('#flame-body').isHidden(), true);
    assert.match(page.url(), /#.*flame=0/);
    page.on('request', count);
    // Three whole refreshes while hidden: a fourth has begun.
    const refreshes = countRequests(page, 'processes');
    await until('three refreshes while hidden', async () => refreshes.count >= 4 || refreshes.count);
    refreshes.stop();
    page.off('request', count);
    assert.deepEqual(asked, [], 'no key=traceback request while hidden');
    await page.click('#btn-flame');
    await until('the graph back', async () => !(await page.locator('#flame-body').isHidden()) && (await flameFrame(page, null)) !== null);
    assert.doesNotMatch(page.url(), /flame=0/);
  });

  await t.test('refresh pauses and resumes', async () => {
    // Every refresh ends by writing #conn (its text may stay the same within a second): count
    // the writes.
    const writes = () => page.evaluate(() => window.connWrites);
    await page.evaluate(() => {
      window.connWrites = 0;
      new MutationObserver(() => { window.connWrites += 1; })
        .observe(document.getElementById('conn'), { childList: true, characterData: true, subtree: true });
    });
    await page.click('#btn-pause');
    assert.equal(await text(page, '#refresh-info'), 'paused');
    const before = await writes();
    const refreshes = countRequests(page, 'processes');  // attached after the click: begun while paused
    try {
      // Kept: nothing happens while paused, so there is no state to wait on; the test is that
      // three refresh periods go by without a refresh.
      await page.waitForTimeout(1600);
      assert.equal(refreshes.count, 0, 'no refresh began while paused');
      // One under way when the button was pressed may still finish: one write at most.
      assert.ok((await writes()) - before <= 1, 'no refresh while paused');
    } finally {
      refreshes.stop();
      await page.click('#btn-pause');  // resumed even after a failure: the next tests need it
    }
    const resumed = await writes();
    await until('refreshing again', async () => (await writes()) > resumed || 'no refresh since');
  });

  await t.test('controls: trim, key, filters, limit; bad input is reported, not fatal', async () => {
    await page.click('#btn-trim');
    await until('the trim result', async () => /RSS .+ → .+/.test(await text(page, '#trim-result')));

    await page.selectOption('#key', 'function');
    await until('rows by function', async () => (await page.locator('.site-main').allInnerTexts()).some((s) => s.includes('leak_request_buffer')));
    assert.match(page.url(), /#.*key=function/);

    await page.selectOption('#key', 'line');
    await page.fill('#include', '*no_such_file*');
    await page.click('#query button[type=submit]');
    await until('the empty state', async () => /No traced memory matches these filters/.test(await text(page, '#sites-empty')));
    assert.equal(await page.locator('tr.site').count(), 0);
    await shot(page, '06-empty-filter');
    await page.fill('#include', '*leak_target.cpp');
    await page.click('#query button[type=submit]');
    await until('only leak_target rows', async () => {
      const sites = await page.locator('.site-main').allInnerTexts();
      return sites.length >= 2 && sites.every((s) => s.startsWith('leak_target.cpp:'));
    });

    await page.fill('#limit', '0');
    await page.dispatchEvent('#limit', 'change');
    await until('the server\'s reason', async () => /limit=.*1 to 10000/.test(await text(page, '#error')));
    await shot(page, '07-bad-limit');
    await page.fill('#limit', '1');
    await page.dispatchEvent('#limit', 'change');
    await until('one row and no error', async () => (await page.locator('tr.site').count()) === 1 && await page.locator('#error').isHidden());
    await page.fill('#limit', '15');
    await page.dispatchEvent('#limit', 'change');
  });

  await t.test('stop and start tracking', async () => {
    await page.click('#btn-tracking');
    await until('tracking off', async () => /tracking: off/.test(await text(page, '#fact-tracing')));
    await until('the stopped message', async () => /Tracking is stopped/.test(await text(page, '#sites-empty')));
    await shot(page, '08-tracking-stopped');
    await page.click('#btn-tracking');
    await until('tracking on', async () => /tracking: on/.test(await text(page, '#fact-tracing')));
    await until('no error', async () => page.locator('#error').isHidden());
  });

  await t.test('a server that restarts: the page says so, then recovers', async () => {
    const port = target.port;
    await target.kill();
    await until('the unreachable state', async () => /unreachable/.test(await text(page, '#conn')));
    assert.match(await text(page, '#error'), /Cannot reach the server/);
    await shot(page, '09-server-down');
    target = await Target.start(PROGRAM, ['--paused', '--port', String(port)], HISTORY);
    await until('recovery with a new baseline', async () => /no baseline any more \(it or its tracking restarted\)/.test(await text(page, '#notice')) && /live/.test(await text(page, '#conn')));
    await target.send('tick 3');
    await until('growth since the new baseline', async () => {
      const grow = await rowOf(page, LINES.grow);
      return grow?.size === fmt(growSize(3)) && grow?.sizeDiff === fmt(growSize(3), true) ? true : grow;
    });
    await shot(page, '10-restarted');
  });

  await t.test('sampled mode and its interval are shown plainly', async () => {
    const route = (name) => fetch(`http://127.0.0.1:${target.port}/debug/memory/${name}`, { method: 'POST' });
    assert.equal((await route('stop')).status, 200);
    assert.equal((await route('start?mode=sampled&sample_interval=524288')).status, 200);
    await until('the sampled mode', async () => /mode: sampled, 1 sample per 512 KiB allocated \(sizes are estimates\)/.test(await text(page, '#fact-mode')));
    await shot(page, '11-sampled-mode');
  });

  await t.test('a bearer token is asked once and kept for the session', async () => {
    await target.kill();
    target = await Target.start(PROGRAM, ['--paused', '--token', 's3cret']);
    const fresh = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
    fresh.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await fresh.goto(`http://127.0.0.1:${target.port}/debug/memory/#refresh=500`);
    await fresh.locator('#token-dialog').waitFor({ state: 'visible' });
    await shot(fresh, '12-token-dialog');
    await fresh.fill('#token-input', 'wrong');
    await fresh.click('#token-dialog button[value=ok]');
    await until('the refusal', async () => /refused/.test(await text(fresh, '#token-reason')));
    await fresh.fill('#token-input', 's3cret');
    await fresh.click('#token-dialog button[value=ok]');
    await until('data with the token', async () => /mode: exact/.test(await text(fresh, '#fact-mode')) && /live/.test(await text(fresh, '#conn')));
    await fresh.reload();
    await until('data again after a reload', async () => /live/.test(await text(fresh, '#conn')));
    assert.equal(await fresh.locator('#token-dialog').isVisible(), false, 'not asked twice');
  });

  await t.test("a page opened on a process that ran a while shows the server's history and verdicts at once", async () => {
    // The server has judged both sites before any page is open.
    const history = async () => (await fetch(`http://127.0.0.1:${veteran.port}/debug/memory/history?format=json&key=line&limit=50`)).json();
    const siteIn = (answer, line) => answer.stats.find((s) => s.file.endsWith('/leak_target.cpp') && s.line === line);
    await until('the server calls the leak growing and the cache plateaued', async () => {
      const answer = await history();
      const verdicts = [siteIn(answer, LINES.grow)?.verdict, siteIn(answer, LINES.cache)?.verdict];
      return verdicts.join() === 'growing,plateaued' ? true : verdicts;
    }, 60000);

    // A refresh period of 10 minutes: whatever shows came from the first refresh, no poll after.
    const fresh = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
    fresh.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const requests = [];
    fresh.on('request', (r) => requests.push(new URL(r.url())));
    const historyAnswer = fresh.waitForResponse((r) => new URL(r.url()).pathname === '/debug/memory/history');
    const opened = Date.now();
    await fresh.goto(`http://127.0.0.1:${veteran.port}/debug/memory/#refresh=600000`);
    await until('the first refresh', async () => /live/.test(await text(fresh, '#conn')), 10000);
    const answer = await (await historyAnswer).json();
    const grow = await rowOf(fresh, LINES.grow);
    const cache = await rowOf(fresh, LINES.cache);
    const server = [siteIn(answer, LINES.grow), siteIn(answer, LINES.cache)];
    console.log(`# veteran up ${((opened - veteranStarted) / 1000).toFixed(1)} s: ${answer.points.length} points; ` +
      `page live after ${Date.now() - opened} ms; verdicts ${grow?.verdict}, ${cache?.verdict}`);

    // The table's diff, once (the flame graph asks for its own, key=traceback).
    const tableDiffs = requests.filter((u) => u.pathname.endsWith('/diff') && u.searchParams.get('key') !== 'traceback');
    assert.equal(tableDiffs.length, 1, 'one refresh, no polling');
    assert.equal(grow?.verdict, 'growing');
    assert.equal(cache?.verdict, 'plateaued');
    assert.deepEqual([grow.verdict, cache.verdict], server.map((s) => s.verdict), "the rows say what GET history says");
    assert.ok(answer.points.length >= 5, `a history of ${answer.points.length} points`);
    // Each row's sparkline is the server's series for it, point for point (the veteran never
    // idles: no point is folded).
    assert.equal(grow.sparkSeries, server[0].series.length);
    assert.equal(cache.sparkSeries, server[1].series.length);
    assert.equal(grow.sparkPoints, answer.points.length - answer.points.filter((p) => p.idle).length);
    // The memory chart: the server's points (traced, peak; RSS where known).
    const chart = await fresh.evaluate(() => Object.fromEntries(['heap', 'peak', 'rss'].map((c) =>
      [c, document.querySelector(`#chart polyline.series.${c}`)?.getAttribute('points')?.split(' ').length ?? 0])));
    assert.deepEqual(chart, {
      heap: answer.points.length, peak: answer.points.length, rss: answer.points.filter((p) => p.rss >= 0).length,
    });
    // The badge explains itself with the server's numbers.
    const title = await fresh.locator('tr.site', { hasText: `leak_target.cpp:${LINES.grow}` }).locator('.verdict').getAttribute('title');
    assert.match(title, /keeps rising.*\/min, last grew \d+ s ago\)$/);
    await shot(fresh, '13-history-at-open');
  });

  await t.test('a process with too short a history: the server says unknown, and so does the page', async () => {
    // The default interval (10 s): fewer than the 5 points a verdict needs for 40 s at least.
    const young = await Target.start(PROGRAM, ['--paused']);
    try {
      await young.send('tick 3');
      const fresh = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
      fresh.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      await fresh.goto(`http://127.0.0.1:${young.port}/debug/memory/#refresh=500`);
      await until('the leak at its size', async () => (await rowOf(fresh, LINES.grow))?.size === fmt(growSize(3)));
      const grow = await rowOf(fresh, LINES.grow);
      assert.equal(grow.verdict, 'unknown');
      const diff = await (await fetch(`http://127.0.0.1:${young.port}/debug/memory/diff?format=json`)).json();
      const stat = diff.stats.find((s) => s.file.endsWith("/leak_target.cpp") && s.line === LINES.grow);
      assert.equal(stat.verdict, 'unknown', 'as the server says');
      assert.match(await fresh.locator('tr.site .verdict').first().getAttribute('title'), /shorter than 5 points/);
      await shot(fresh, '14-history-too-short');
    } finally {
      await young.kill();
    }
  });

  assert.deepEqual(problems, [], 'no script errors on the page');
});
