// The callsite table: one row per key of the diff, updated in place between refreshes so
// rows keep their identity (an open traceback, a hover or a click in flight survive).
// Server text only ever goes through textContent.
import { formatSize, formatCount } from './format.js';
import { sparkline } from './charts.js';

// The verdict is the server's (its history, its rule: docs/history.md); the page only shows it.
export const VERDICT_HELP = {
  growing: 'The server\'s history: keeps rising as the program works (idle time changes nothing): a leak candidate.',
  plateaued: 'The server\'s history: rose, then held flat while the program kept working: a cache at its capacity or full, not a leak.',
  stable: 'The server\'s history: no material change while the program worked.',
  shrinking: 'The server\'s history: falling while the program worked.',
  unknown: 'The server cannot tell yet: its history is shorter than 5 points in which the program worked, is off, or never saw this callsite among its biggest stacks (all processes merged: they disagree).',
};

export const VERDICTS = Object.keys(VERDICT_HELP);

// Retention as the server's text writes it: "100%", "<1%".
const percent = (fraction) => {
  const p = fraction * 100;
  return `${p > 0 && p < 0.5 ? '<1' : Math.round(p)}%`;
};
// The server sent "retention": null on a judged stat: the callsite allocated nothing.
const allocatedNothing = (stat) => !!stat && 'retention' in stat && stat.retention === null &&
  !!stat.verdict && stat.verdict !== 'unknown';

// Why, in the server's numbers, as text /diff?verdicts=1 says it: "retains 100%, idle 620 s".
// Retention: of what the callsite allocated over the history, the fraction still live.
export function verdictWhy(stat) {
  if (!stat || stat.verdict === 'unknown') return '';  // as the text: unknown says no more
  const parts = [];
  if (Number.isFinite(stat?.retention)) parts.push(`retains ${percent(stat.retention)}`);
  else if (allocatedNothing(stat)) parts.push('allocated nothing');
  if (Number.isFinite(stat?.idle_s)) parts.push(`idle ${Math.round(stat.idle_s)} s`);
  return parts.join(', ');
}

// The badge's hover text: what the verdict means and the server's numbers behind it.
export function verdictTitle(stat, verdict) {
  const help = VERDICT_HELP[verdict] ?? '';
  const parts = [];
  if (Number.isFinite(stat?.retention)) parts.push(`retains ${percent(stat.retention)} of what it allocated over the history`);
  else if (allocatedNothing(stat)) parts.push('allocated nothing over the history');
  if (Number.isFinite(stat?.idle_s)) parts.push(`last allocated ${Math.round(stat.idle_s)} s ago`);
  const said = parts.length ? `${help} It ${parts.join(', ')}.` : help;
  if (!Number.isFinite(stat?.growth_per_min)) return said;
  const since = Number.isFinite(stat.since_last_growth_s) ? `, last grew ${Math.round(stat.since_last_growth_s)} s ago` : '';
  return `${said} (${formatSize(stat.growth_per_min, true)}/min${since})`;
}

const COLUMNS = 10;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

const basename = (path) => (path || '').split('/').pop();
const signClass = (n) => (n > 0 ? 'up' : n < 0 ? 'down' : 'zero');

// What the first line of a row says for each key type, and what the second adds.
function describe(stat, keyType) {
  const where = stat.file ? `${basename(stat.file)}${stat.line ? `:${stat.line}` : ''}` : '';
  const fn = shortName(stat);
  switch (keyType) {
    case 'function': return [fn || stat.key, stat.file || stat.module || ''];
    case 'file': return [basename(stat.key) || stat.key, stat.key];
    case 'traceback': return [where || fn || stat.key, `${fn}  ·  ${stat.traceback?.length ?? 0} frames`];
    default: return [where || stat.key, [fn, stat.file].filter(Boolean).join('  ·  ')];
  }
}

// A function as the server shortens it for display (template arguments and parameters
// elided, as pprof does); older servers send only the full name.
const shortName = (f) => f.short_function || f.function || '';

// frames: [{function, short_function, file, line, module}], innermost first; `mark` picks
// the callsite's own. Names are short; the full one shows on hover.
function renderFrames(frames, mark) {
  const list = el('ol', 'frames');
  list.start = 0;
  frames.forEach((f) => {
    const item = el('li', mark(f) ? 'frame mark' : 'frame');
    const fn = el('span', 'fn', shortName(f) || '??');
    fn.title = f.function || '';
    item.append(fn);
    item.append(el('span', 'loc', f.file ? `${f.file}:${f.line ?? 0}` : '(no debug info)'));
    const mod = el('span', 'mod', basename(f.module));
    mod.title = f.module || '';
    item.append(mod);
    list.append(item);
  });
  return list;
}

export class SitesTable {
  // loadStacks(stat) -> Promise<[{size, size_diff, count, frames}]>: the whole stacks behind a row.
  constructor(tbody, { loadStacks }) {
    this.tbody = tbody;
    this.loadStacks = loadStacks;
    this.rows = new Map();  // id -> {tr, cells, detail, stat}
    this.openId = null;
  }

  // sites: [{id, stat, points, verdict}] in display order.
  render(sites, keyType) {
    const maxGrowth = Math.max(1, ...sites.map((s) => Math.abs(s.stat.size_diff ?? 0)));
    const seen = new Set();
    const order = [];
    sites.forEach((site, index) => {
      seen.add(site.id);
      const row = this.rows.get(site.id) ?? this.createRow(site.id);
      row.stat = site.stat;
      this.fill(row, site, index, keyType, maxGrowth);
      order.push(row.tr);
      if (row.detail) order.push(row.detail);
    });
    // Move only what is out of place: a moved row loses focus and hover.
    order.forEach((node, i) => {
      const here = this.tbody.children[i] ?? null;
      if (here !== node) this.tbody.insertBefore(node, here);
    });
    for (const [id, row] of this.rows) {
      if (seen.has(id)) continue;
      row.tr.remove();
      row.detail?.remove();
      this.rows.delete(id);
    }
    if (this.openId && !this.rows.has(this.openId)) this.openId = null;
  }

  clear() {
    this.render([], 'line');
  }

  createRow(id) {
    const tr = el('tr', 'site');
    tr.tabIndex = 0;
    tr.dataset.id = id;
    const cells = Array.from({ length: COLUMNS }, () => tr.appendChild(el('td')));
    const row = { tr, cells, detail: null, stat: null };
    tr.addEventListener('click', () => this.toggle(id));
    tr.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); this.toggle(id); } });
    this.rows.set(id, row);
    return row;
  }

  fill(row, site, index, keyType, maxGrowth) {
    const { stat, points, verdict } = site;
    const [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9] = row.cells;
    const [main, sub] = describe(stat, keyType);
    c0.className = 'rank'; c0.textContent = String(index + 1);
    c1.className = 'site-cell';
    c1.replaceChildren(el('div', 'site-main', main), el('div', 'site-sub', sub));
    c1.title = stat.key;
    c2.className = 'num size'; c2.textContent = formatSize(stat.size);
    c3.className = `num size-diff ${signClass(stat.size_diff)}`; c3.textContent = formatSize(stat.size_diff, true);
    const bar = el('div', `bar ${signClass(stat.size_diff)}`);
    bar.style.width = `${(100 * Math.abs(stat.size_diff ?? 0)) / maxGrowth}%`;
    c4.className = 'bar-cell'; c4.replaceChildren(bar);
    c5.className = 'num count'; c5.textContent = formatCount(stat.count);
    c6.className = `num count-diff ${signClass(stat.count_diff)}`; c6.textContent = formatCount(stat.count_diff, true);
    c7.className = 'num average'; c7.textContent = formatSize(stat.average ?? (stat.count ? stat.size / stat.count : 0));
    c8.className = 'trend'; c8.innerHTML = sparkline(points, { verdict });
    c9.className = 'verdict-cell';
    const badge = el('span', `verdict ${verdict}`, verdict);
    badge.title = verdictTitle(stat, verdict);
    const why = verdictWhy(stat);
    c9.replaceChildren(...(why ? [badge, el('div', 'verdict-why', why)] : [badge]));
    row.tr.classList.toggle('open', this.openId === row.tr.dataset.id);
  }

  toggle(id) {
    const previous = this.openId ? this.rows.get(this.openId) : null;
    if (previous) {
      previous.detail?.remove();
      previous.detail = null;
      previous.tr.classList.remove('open');
    }
    this.openId = this.openId === id ? null : id;
    if (!this.openId) return;
    const row = this.rows.get(id);
    row.tr.classList.add('open');
    row.detail = el('tr', 'detail');
    const cell = row.detail.appendChild(el('td'));
    cell.colSpan = COLUMNS;
    cell.append(el('div', 'loading', 'Loading the traceback…'));
    row.tr.after(row.detail);
    this.showStacks(row, cell);
  }

  async showStacks(row, cell) {
    const stat = row.stat;
    const mark = (f) => f.file === stat.file && (!stat.line || f.line === stat.line) &&
      (!stat.function || f.function === stat.function);
    let stacks;
    try {
      stacks = await this.loadStacks(stat);
    } catch (e) {
      cell.replaceChildren(el('div', 'error-inline', `Could not load the traceback: ${e.message}`));
      return;
    }
    const box = el('div', 'traceback');
    if (stacks.length === 0) box.append(el('p', 'muted', 'No live stack reaches this callsite any more.'));
    stacks.forEach((s, i) => {
      const title = stacks.length > 1
        ? `Stack ${i + 1} of ${stacks.length}: size=${formatSize(s.size)} (${formatSize(s.size_diff ?? 0, true)}), count=${formatCount(s.count)}`
        : `Traceback, most recent call first (${s.frames.length} frames); the callsite is highlighted`;
      box.append(el('h3', 'stack-title', title), renderFrames(s.frames, mark));
    });
    cell.replaceChildren(box);
  }
}
