// The dashboard's loop: every few seconds read stats, the baseline and the diff; keep the
// session's history for sparklines, verdicts and the memory chart; wire the controls.
// Each refresh starts from scratch, so empty data, errors and a restarted server only ever
// cost one refresh (the history is all that carries over).
import { Api, apiBase } from './api.js';
import { tokenPrompt } from './auth.js';
import { classify } from './verdict.js';
import { History } from './history.js';
import { SitesTable } from './table.js';
import { lineChart } from './charts.js';
import { formatSize, formatCount, formatClock, formatAge } from './format.js';

const $ = (id) => document.getElementById(id);
// Page settings live in the fragment (#key=function&refresh=500): the server refuses query
// parameters a route does not take, and the fragment never reaches it.
const url = new URLSearchParams(location.hash.slice(1));
const intParam = (name, lo, hi, fallback) => {
  const n = Number.parseInt(url.get(name) ?? '', 10);
  return Number.isFinite(n) ? Math.min(hi, Math.max(lo, n)) : fallback;
};
// #refresh=ms changes the period (tests use a short one); 3 s otherwise.
const REFRESH_MS = intParam('refresh', 250, 600000, 3000);

const state = {
  paused: false, busy: false, again: false, timer: 0, settingBaseline: false,
  stats: null, baseline: null,  // the last answers of /stats and /baseline
  lastOk: 0,
};
const sizes = new History();                       // callsite id -> size at each refresh
const memory = new History({ maxSamples: 1200 });  // heap / peak / rss at each refresh
const api = new Api(apiBase(location.pathname));
api.onUnauthorized = tokenPrompt(api, () => refreshNow());
const table = new SitesTable($('sites'), { loadStacks });

// ---- the query (key, filters, limit), mirrored in the fragment so it can be shared ----
for (const name of ['key', 'include', 'exclude', 'limit']) if (url.has(name)) $(name).value = url.get(name);
function query() {
  return { key: $('key').value, limit: $('limit').value, include: $('include').value.trim(), exclude: $('exclude').value.trim() };
}
function applyQuery(event) {
  event?.preventDefault();
  const q = new URLSearchParams(location.hash.slice(1));
  for (const [name, value] of Object.entries(query())) value ? q.set(name, value) : q.delete(name);
  history.replaceState(null, '', `${location.pathname}${location.search}#${q}`);
  table.clear();
  refreshNow();
}

// ---- messages ----
function banner(id, text) {
  $(id).textContent = text ?? '';
  $(id).hidden = !text;
}
const notice = (text) => banner('notice', text);
function connection(text, cls) {
  $('conn').textContent = text;
  $('conn').className = `conn ${cls}`;
}
function failed(error) {
  document.body.classList.toggle('stale', error.status === 0);
  if (error.status === 401) {
    connection('waiting for the access token', 'warn');
    banner('error', error.message);
  } else if (error.status === 0) {
    const since = state.lastOk ? ` Showing the data of ${formatClock(state.lastOk)}.` : '';
    connection('server unreachable, retrying', 'bad');
    banner('error', `${error.message}${since} Retrying every ${REFRESH_MS / 1000} s.`);
  } else {
    connection('error', 'bad');
    banner('error', error.message);
    if (table.rows.size === 0) showEmpty('No data: the server refused the request (see the message above).');
  }
}

// ---- the refresh loop ----
function schedule() {
  clearTimeout(state.timer);
  if (!state.paused) state.timer = setTimeout(refresh, REFRESH_MS);
}
function refreshNow() {
  clearTimeout(state.timer);
  refresh();
}

async function refresh() {
  if (state.busy) { state.again = true; return; }
  state.busy = true;
  try {
    const stats = await api.get('stats');
    showStats(stats);
    if (stats.tracing) {
      await ensureBaseline();
      showDiff(await api.get('diff', query()), stats);
    } else {
      table.clear();
      $('card-growth').textContent = '–';
      $('card-growth').className = 'big';
      $('card-growth-count').textContent = 'tracking is stopped';
      showEmpty('Tracking is stopped: nothing is traced, so growth cannot be measured. Press “Start tracking”.');
    }
    state.lastOk = Date.now();
    connection(`live · updated ${formatClock(state.lastOk)}`, 'ok');
    document.body.classList.remove('stale');
    banner('error', '');
  } catch (error) {
    failed(error);
  } finally {
    state.busy = false;
    if (state.again) { state.again = false; refresh(); } else schedule();
  }
}

// As the manual workflow does, the first look takes the baseline when there is none. A
// known baseline that vanished means the server or its tracking restarted: the history
// describes what came before, so it starts over.
async function ensureBaseline() {
  let info = null;
  try {
    info = await api.get('baseline');
  } catch (error) {
    if (error.status !== 409) throw error;
  }
  if (!info) {
    const restarted = state.baseline !== null;
    info = await takeBaseline();
    if (restarted) { sizes.clear(); memory.clear(); }
    notice(restarted
      ? `The server had no baseline any more (it or its tracking restarted), so this page took a new one at ${formatClock(Date.now())}. Growth is measured from it.`
      : `There was no baseline yet, so this page took one at ${formatClock(Date.now())}, as the manual workflow does on first look. Growth is measured from it; “Set baseline” moves it.`);
  } else if (state.baseline && info.taken_at_ms !== state.baseline.taken_at_ms && !state.settingBaseline) {
    notice(`The baseline was moved by someone else at ${formatClock(Date.now())} (another client).`);
  }
  showBaseline(info);
}

async function takeBaseline() {
  state.settingBaseline = true;  // a refresh in flight must not mistake ours for someone else's
  try {
    const answer = await api.post('baseline');
    const info = 'taken_at_ms' in answer ? answer : await api.get('baseline');
    showBaseline(info);
    return info;
  } finally {
    state.settingBaseline = false;
  }
}

// The time is the server's age_ms counted back on this machine's clock: the two clocks
// need not agree.
function showBaseline(info) {
  state.baseline = info;
  const age = Number(info?.age_ms);
  const wall = Number.isFinite(age) ? Date.now() - age : null;
  $('card-baseline').textContent = wall ? formatClock(wall) : 'taken';
  $('card-baseline-age').textContent = wall ? `${formatAge(age)} ago` : '';
}

function showStats(stats) {
  state.stats = stats;
  const sampled = stats.mode === 'sampled';
  $('fact-mode').textContent = sampled
    ? `mode: sampled, 1 sample per ${formatSize(stats.sample_interval)} allocated (sizes are estimates)`
    : `mode: ${stats.mode ?? '?'}${stats.mode === 'exact' ? ' (every allocation traced)' : ''}`;
  $('fact-tracing').textContent = `tracking: ${stats.tracing ? 'on' : 'off'}`;
  $('fact-tracing').className = `fact ${stats.tracing ? 'on' : 'off'}`;
  $('fact-frames').textContent = `frames: ${stats.max_frames ?? '?'}`;
  $('btn-tracking').textContent = stats.tracing ? 'Stop tracking' : 'Start tracking';
  $('btn-tracking').classList.toggle('primary', !stats.tracing);
  $('btn-tracking').title = stats.tracing ? 'Stop tracing; as tracemalloc.stop(), this forgets every trace' : 'Start tracing allocations again';

  const heap = stats.traced?.current ?? 0;
  $('card-heap').textContent = formatSize(heap);
  $('card-heap-peak').textContent = `peak ${formatSize(stats.traced?.peak)}`;
  $('card-rss').textContent = formatSize(stats.rss);
  $('card-rss-peak').textContent = `peak ${formatSize(stats.peak_rss)} · ${formatSize(Math.max(0, (stats.rss ?? 0) - heap))} beyond the traced heap` +
    allocatorHolds(stats.allocator);
  $('card-tracker').textContent = formatSize(stats.tracker_memory);
  $('card-tracker-sub').textContent = `${formatCount(stats.live_blocks)} live blocks · ${formatCount(stats.stacks)} stacks` +
    (stats.dropped ? ` · ${formatCount(stats.dropped)} dropped` : '');

  memory.record(Date.now(), [['heap', heap], ['peak', stats.traced?.peak ?? heap], ['rss', stats.rss ?? 0]]);
  drawChart();
}

function drawChart() {
  const width = Math.max(320, $('chart').clientWidth);
  $('chart').innerHTML = lineChart(['rss', 'peak', 'heap'].map((name) => ({ cls: name, points: memory.points(name) })), { width });
}
new ResizeObserver(() => drawChart()).observe($('chart'));

function showEmpty(text) {
  $('sites-empty').textContent = text ?? '';
  $('sites-empty').hidden = !text;
}

function showDiff(diff, stats) {
  const keyType = diff.key ?? query().key;
  const rows = Array.isArray(diff.stats) ? diff.stats : [];
  const now = Date.now();
  // Whole stacks share their user frame's "file:line" key: tell them apart by every frame.
  const id = (stat) => `${keyType}\u0000${keyType === 'traceback'
    ? (stat.traceback ?? []).map((f) => `${f.address ?? ''}@${f.file}:${f.line}`).join('|') : stat.key}`;
  sizes.record(now, rows.map((stat) => [id(stat), stat.size ?? 0]));
  const noise = stats.mode === 'sampled' ? stats.sample_interval ?? 0 : 0;
  table.render(rows.map((stat) => ({
    id: id(stat), stat, points: sizes.points(id(stat)), verdict: classify(sizes.values(id(stat)), { noise }),
  })), keyType);

  const total = diff.total ?? {};
  $('card-growth').textContent = formatSize(total.size_diff ?? 0, true);
  $('card-growth').className = `big ${total.size_diff > 0 ? 'up' : total.size_diff < 0 ? 'down' : ''}`;
  $('card-growth-count').textContent = `${formatCount(total.count_diff ?? 0, true)} blocks · now ${formatSize(total.size)} in ${formatCount(total.count)}`;
  const { include, exclude } = query();
  showEmpty(rows.length ? '' : include || exclude
    ? 'No traced memory matches these filters.'
    : 'Nothing traced yet: no live allocation since tracking started.');
}

// The whole stacks behind one row: its own traceback when the key is a whole stack, else the
// stacks of the key=traceback diff that pass through this callsite.
async function loadStacks(stat) {
  if (query().key === 'traceback') return [{ ...stat, frames: stat.traceback ?? [] }];
  const diff = await api.get('diff', { key: 'traceback', limit: 1000, include: query().include, exclude: query().exclude });
  const matches = (f) => (!stat.file || f.file === stat.file) && (!stat.line || f.line === stat.line) &&
    (query().key === 'file' || !stat.function || f.function === stat.function);
  return (diff.stats ?? []).filter((s) => (s.traceback ?? []).some(matches)).slice(0, 5)
    .map((s) => ({ ...s, frames: s.traceback ?? [] }));
}

// ---- controls ----
async function act(work) {
  try {
    await work();
  } catch (error) {
    failed(error);
  }
  refreshNow();
}
// What the allocator in effect keeps that is not the program's: the part of "beyond the
// traced heap" that POST /trim can give back.
function allocatorHolds(allocator) {
  if (!allocator?.name) return '';
  const free = {
    glibc: allocator.fordblks,
    jemalloc: allocator.resident - allocator.allocated,
    tcmalloc: allocator.pageheap_free_bytes,
    // mimalloc's process info has no free-bytes figure: only its name is shown.
  }[allocator.name];
  if (!Number.isFinite(free)) return ` · allocator: ${allocator.name}`;
  return ` · ${allocator.name} holds ${formatSize(Math.max(0, free))} free`;
}

$('btn-baseline').addEventListener('click', () => act(async () => {
  await takeBaseline();
  notice(`Baseline set at ${formatClock(Date.now())}: growth now counts from here.`);
}));
$('btn-tracking').addEventListener('click', () => act(() => api.post(state.stats?.tracing ? 'stop' : 'start')));
$('btn-trim').addEventListener('click', () => act(async () => {
  const r = await api.post('trim');
  $('trim-result').textContent = `RSS ${formatSize(r.rss_before)} → ${formatSize(r.rss_after)} ` +
    `(${formatSize(r.rss_after - r.rss_before, true)}) at ${formatClock(Date.now())}`;
}));
$('btn-pause').addEventListener('click', () => {
  state.paused = !state.paused;
  $('btn-pause').textContent = state.paused ? 'Resume refresh' : 'Pause refresh';
  showRefreshInfo();
  if (state.paused) clearTimeout(state.timer); else refreshNow();
});
function showRefreshInfo() {
  $('refresh-info').textContent = state.paused ? 'paused' : `refreshing every ${REFRESH_MS / 1000} s`;
}
$('query').addEventListener('submit', applyQuery);
$('key').addEventListener('change', applyQuery);
$('limit').addEventListener('change', applyQuery);

showRefreshInfo();
refresh();
