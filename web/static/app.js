// The dashboard's loop: every few seconds read stats, the baseline and the diff; read the
// server's history (charts, sparklines) when the page opens and whenever the server has a new
// point; show the server's verdicts; wire the controls. Each refresh starts from scratch, so
// empty data, errors and a restarted server only ever cost one refresh.
import { Api, apiBase } from './api.js';
import { tokenPrompt } from './auth.js';
import { History, fromServer } from './history.js';
import { SitesTable, VERDICTS } from './table.js';
import { lineChart } from './charts.js';
import { formatSize, formatCount, formatClock, formatAge, formatCap } from './format.js';
import { groupName, pickerOptions, sumOf } from './processes.js';
import { stacksFromDiff } from './flame.js';
import { FlameGraph } from './flameview.js';
import { showRoutes } from './routes.js';

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
  // pid= of every request: 'port' the process holding the port (no pid=), a process id, or
  // 'all' (every process merged); '' until the first GET processes decides: all of them when
  // the program has several (a prefork server's master serves no request), else 'port'. From
  // the fragment: #pid=4242 is shareable.
  pid: /^(all|port|[1-9][0-9]*)$/.test(url.get('pid') ?? '') ? url.get('pid') : '',
  processes: [], thisPid: null,  // the last GET processes
  allBaselineAt: 0,  // when this page took the baselines of every process (merged view)
  server: null, serverAt: 0,  // fromServer(GET history) for this pid and query, and when it was read
};
// Routes that answer for one process only (stats, GET baseline, start, stop, trim): the
// merged view shows the holder's.
const onePid = () => (state.pid === 'all' ? 'port' : state.pid);
// Thrown when the picker changed while a refresh was in flight: its answers are another
// process's and must not be shown.
class Stale extends Error {}
const check = (pid) => { if (pid !== state.pid) throw new Stale(); };
// What the page polled itself: the charts when the server has no history for it (see
// serverHistory()).
const sizes = new History();                       // callsite id -> size at each refresh
const memory = new History({ maxSamples: 1200 });  // heap / peak / rss at each refresh
const api = new Api(apiBase(location.pathname));
api.onUnauthorized = tokenPrompt(api, () => refreshNow());
const table = new SitesTable($('sites'), { loadStacks });
const flame = new FlameGraph($('flame'), $('flame-crumbs'), $('flame-empty'));
// The flame graph asks for every changed stack: #flame=0 (the Hide button) spares the server.
state.flame = url.get('flame') !== '0';
// Stacks asked for the flame graph: the report is ordered by |size_diff|, so these are the
// ones that changed most. Whole stacks are the biggest answers liveheap makes (tens of KB of
// JSON each, full names included), asked on every refresh: the host is not asked for more.
const FLAME_LIMIT = 200;

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
  state.server = null;  // another key or filter: the server groups its history anew
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
  let pid = state.pid;
  try {
    await loadProcesses();
    pid = state.pid;  // decided by the processes on the first refresh
    const stats = await api.get('stats', { pid: onePid() });
    check(pid);
    await loadHistory(pid);
    showStats(stats);
    if (stats.tracing) {
      const diff = pid === 'all' ? await mergedDiff() : (await ensureBaseline(pid), await api.report('diff', { ...query(), pid }));
      check(pid);
      if (pid !== 'all') showShares(null);
      showDiff(diff);
      await loadRoutes(pid);
      if (state.flame) await loadFlame(pid);
    } else {
      table.clear();
      flame.update([], 'Tracking is stopped: nothing to draw.');
      $('flame-note').textContent = '';
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
    if (!(error instanceof Stale)) failed(error);
  } finally {
    state.busy = false;
    if (state.again) { state.again = false; refresh(); } else schedule();
  }
}

// The "by route" panel, shown once the host tags its requests; a server whose answer is
// refused (an older one) keeps it hidden.
async function loadRoutes(pid) {
  let answer = null;
  try {
    answer = await api.get('routes', { pid });
  } catch (error) {
    if (error instanceof Stale) throw error;
  }
  check(pid);
  $('routes-panel').hidden = !showRoutes($('routes'), answer);
}

// ---- the process picker ----
// GET processes, and the picker shown when there is more than one process to choose from.
// A server without the route (404) has one process.
async function loadProcesses() {
  let answer = { processes: [] };
  try {
    answer = await api.get('processes');
  } catch (error) {
    if (error.status === 0 || error.status === 401) throw error;
  }
  const list = Array.isArray(answer.processes) ? answer.processes : [];
  state.processes = list;
  state.thisPid = answer.this_pid ?? null;
  if (state.pid === '') state.pid = list.length > 1 ? 'all' : 'port';  // not written to the fragment
  if (!['all', 'port'].includes(state.pid) && list.length && !list.some((p) => String(p.pid) === state.pid)) {
    const gone = state.pid;
    choosePid(list.length > 1 ? 'all' : 'port');
    notice(`Process ${gone} is not listed any more (it exited); showing ${list.length > 1 ? 'every process, merged' : 'the process holding the port'}.`);
    state.again = true;  // refresh at once, for the new choice
    throw new Stale();
  }
  $('picker').hidden = list.length < 2 && state.pid === 'port';
  renderPicker(pickerOptions(list, state.thisPid));
  showGroup(list);
}

// Rebuilds the options only when the processes change: a refresh must not close the list
// while someone is choosing (the labels' figures are updated in place).
function renderPicker(options) {
  const select = $('pid');
  const values = options.map((o) => o.value).join(',');
  if (select.dataset.values !== values) {
    select.replaceChildren(...options.map((o) => new Option(o.label, o.value)));
    select.dataset.values = values;
  }
  options.forEach((o, i) => { select.options[i].textContent = o.label; select.options[i].title = o.title ?? ''; });
  if (![...select.options].some((o) => o.value === state.pid)) select.add(new Option(state.pid === 'port' ? 'the process holding the port' : `pid ${state.pid}`, state.pid));
  select.value = state.pid;
}

// The header says what the page reads: "2 workers + master" merged, or "pid 4242, 1 of 3
// processes" (the picker's "all" reads them together).
function showGroup(list) {
  const fact = $('fact-processes');
  fact.hidden = list.length < 2;
  if (fact.hidden) return;
  fact.textContent = state.pid === 'all' ? groupName(list, state.thisPid)
    : `${state.pid === 'port' ? `pid ${state.thisPid} (port)` : `pid ${state.pid}`}, 1 of ${list.length} processes`;
  fact.title = state.pid === 'all' ? 'Every process of this program, merged (the Process picker chooses one)'
    : 'One process of this program; choose "all" in the Process picker to read them together';
}

function choosePid(value) {
  state.pid = value;
  const q = new URLSearchParams(location.hash.slice(1));
  q.set('pid', value);
  history.replaceState(null, '', `${location.pathname}${location.search}#${q}`);
  // Another process's heap: its history, baseline and notices start over.
  table.clear(); sizes.clear(); memory.clear();
  state.server = null;
  state.baseline = null;
  state.allBaselineAt = 0;
  notice('');
}
$('pid').addEventListener('change', () => { choosePid($('pid').value); refreshNow(); });

// The merged view: every process's diff, summed by callsite. A process without a baseline
// is left out of the sum (the answer's `failed`); when none has one, the page takes one in
// every process, as on first look.
async function mergedDiff() {
  const params = { ...query(), pid: 'all' };
  let diff;
  try {
    diff = await api.report('diff', params);
  } catch (error) {
    if (error.status !== 409) throw error;
    await takeBaseline('all');
    check('all');
    notice(`No process had a baseline yet, so this page took one in each of them at ${formatClock(Date.now())}. Growth is measured from them.`);
    diff = await api.report('diff', params);
  }
  check('all');
  const failed = Array.isArray(diff.failed) ? diff.failed : [];
  if (failed.length) {
    notice(`Not in the sum: ${failed.map((f) => `pid ${f.pid} (${f.status === 409 ? 'no baseline yet; “Set baseline” takes one in every process' : f.error})`).join(', ')}.`);
  }
  showBaseline(state.allBaselineAt ? { age_ms: Date.now() - state.allBaselineAt } : null);
  showShares(diff.processes);
  return diff;
}

// Each process's growth since its baseline, so the one that leaks is seen at a glance; a
// process that joined after the baseline (a respawned worker) is new: its whole heap counts.
function showShares(processes) {
  const strip = $('process-strip');
  const list = Array.isArray(processes) ? processes : [];
  strip.hidden = list.length === 0;
  strip.replaceChildren(...list.map((p) => {
    const chip = document.createElement('span');
    const growth = Number(p.size_diff) || 0;
    chip.className = `share${p.new ? ' new' : ''}${growth > 0 ? ' up' : growth < 0 ? ' down' : ''}`;
    chip.dataset.pid = String(p.pid);
    chip.textContent = `pid ${p.pid}${p.pid === state.thisPid ? ' (port)' : ''}${p.new ? ' · new' : ''} ${formatSize(growth, true)}`;
    chip.title = p.new ? 'Joined after the baseline (a respawned worker): its whole heap counts as growth'
      : `Growth since this process's baseline; ${formatSize(p.size)} traced now`;
    return chip;
  }));
}

// As the manual workflow does, the first look takes the baseline when there is none. A
// known baseline that vanished means the server or its tracking restarted: the history
// describes what came before, so it starts over. `pid`: the process the refresh is for.
async function ensureBaseline(pid) {
  let info = null;
  try {
    info = await api.get('baseline', { pid });
  } catch (error) {
    if (error.status !== 409) throw error;
  }
  check(pid);
  if (!info) {
    const restarted = state.baseline !== null;
    info = await takeBaseline(pid);
    check(pid);
    if (restarted) { sizes.clear(); memory.clear(); state.server = null; }
    notice(restarted
      ? `The server had no baseline any more (it or its tracking restarted), so this page took a new one at ${formatClock(Date.now())}. Growth is measured from it.`
      : `There was no baseline yet, so this page took one at ${formatClock(Date.now())}, as the manual workflow does on first look. Growth is measured from it; “Set baseline” moves it.`);
  } else if (state.baseline && info.taken_at_ms !== state.baseline.taken_at_ms && !state.settingBaseline) {
    notice(`The baseline was moved by someone else at ${formatClock(Date.now())} (another client).`);
  }
  showBaseline(info);
}

async function takeBaseline(pid = state.pid) {
  state.settingBaseline = true;  // a refresh in flight must not mistake ours for someone else's
  try {
    const answer = await api.post('baseline', { pid });
    check(pid);
    if (pid === 'all') {  // one baseline per process: {processes: [{pid, status, ...}]}
      state.allBaselineAt = Date.now();
      const info = { age_ms: 0 };
      showBaseline(info);
      return info;
    }
    const info = 'taken_at_ms' in answer ? answer : await api.get('baseline', { pid });
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
  const each = state.pid === 'all';
  $('card-baseline').textContent = wall ? formatClock(wall) : each ? '–' : 'taken';
  $('card-baseline-age').textContent = wall ? `${formatAge(age)} ago${each ? ', in every process' : ''}` : each ? 'one per process' : '';
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

  // The merged view sums every process's traced heap and RSS (GET processes); the rest is
  // the holder's.
  const merged = state.pid === 'all' ? sumOf(state.processes) : null;
  const heap = merged ? merged.traced : stats.traced?.current ?? 0;
  const rss = merged ? merged.rss : stats.rss ?? 0;
  const peak = merged ? heap : stats.traced?.peak ?? heap;
  $('card-heap').textContent = formatSize(heap);
  $('card-heap-peak').textContent = merged ? `sum of ${merged.answered} processes` : `peak ${formatSize(stats.traced?.peak)}`;
  $('card-rss').textContent = formatSize(rss);
  $('card-rss-peak').textContent = merged
    ? `sum of ${merged.answered} processes · ${formatSize(Math.max(0, rss - heap))} beyond the traced heaps`
    : `peak ${formatSize(stats.peak_rss)} · ${formatSize(Math.max(0, rss - heap))} beyond the traced heap` + allocatorHolds(stats.allocator);
  $('card-tracker').textContent = formatSize(stats.tracker_memory);
  // Past the tracker-memory cap new stacks fold and new blocks drop: said in the card, in red.
  const cap = formatCap(stats.tracker_memory_cap);
  $('card-tracker-sub').textContent = `${formatCount(stats.live_blocks)} live blocks · ${formatCount(stats.stacks)} stacks` +
    (cap ? ` · ${cap}` : stats.dropped ? ` · ${formatCount(stats.dropped)} dropped` : '') +
    (merged ? ` · pid ${state.thisPid} (port)` : '');
  $('card-tracker-sub').classList.toggle('capped', cap !== '');

  memory.record(Date.now(), [['heap', heap], ['peak', peak], ['rss', rss]]);
  drawChart();
}

// ---- the server's history ----
// GET history: the server records a point every LIVEHEAP_HISTORY_INTERVAL s from the
// process's start, so the charts are full the moment the page opens. Read at open, for a new
// process, key or filter, and again once the server's next point is due. pid=all has none
// (the route answers for one process): the page's own polls draw its charts.
const historyLimit = () => Math.min(10000, Math.max(50, 2 * (Number.parseInt(query().limit, 10) || 10)));
async function loadHistory(pid) {
  if (pid === 'all') { state.server = null; return; }
  const due = !state.server || (state.server.intervalMs > 0 && Date.now() - state.serverAt >= state.server.intervalMs);
  if (!due) return;
  const { key, include, exclude } = query();
  let answer = null;
  try {
    answer = await api.get('history', { key, include, exclude, limit: historyLimit(), pid });
  } catch (error) {
    if (error.status === 0 || error.status === 401) throw error;
    // An older server without the route, or one that refuses it: the page's own polls.
  }
  check(pid);
  state.server = fromServer(answer, rowId(answer?.key ?? key));
  state.serverAt = Date.now();
}
// The server's series when it keeps a history for this view, else null.
const serverHistory = () => (state.server?.intervalMs > 0 ? state.server : null);

function drawChart() {
  const width = Math.max(320, $('chart').clientWidth);
  const server = serverHistory();
  const points = (name) => (server ? server.memory[name] : memory.points(name));
  const empty = server ? `waiting for the server's history (a point every ${server.intervalMs / 1000} s)` : undefined;
  $('chart').innerHTML = lineChart(['rss', 'peak', 'heap'].map((name) => ({ cls: name, points: points(name) })), { width, empty });
}
new ResizeObserver(() => drawChart()).observe($('chart'));

function showEmpty(text) {
  $('sites-empty').textContent = text ?? '';
  $('sites-empty').hidden = !text;
}

// A row's identity for a key type. Whole stacks share their user frame's "file:line" key:
// tell them apart by every frame.
const rowId = (keyType) => (stat) => `${keyType}\u0000${keyType === 'traceback'
  ? (stat.traceback ?? []).map((f) => `${f.address ?? ''}@${f.file}:${f.line}`).join('|') : stat.key}`;

function showDiff(diff) {
  const keyType = diff.key ?? query().key;
  const rows = Array.isArray(diff.stats) ? diff.stats : [];
  const id = rowId(keyType);
  sizes.record(Date.now(), rows.map((stat) => [id(stat), stat.size ?? 0]));
  // The verdict is the server's, never the page's: one rule (docs/history.md). A row the
  // server's history does not hold has an empty sparkline.
  const server = serverHistory();
  table.render(rows.map((stat) => ({
    id: id(stat), stat, points: server ? server.sites.get(id(stat)) ?? [] : sizes.points(id(stat)),
    verdict: VERDICTS.includes(stat.verdict) ? stat.verdict : 'unknown',  // it names a CSS class
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

// The flame graph's data: key=traceback, whose stats are whole stacks with their exact
// size_diff and every frame's short name (format=folded has neither the short names nor, in
// its one-column form, the stacks that shrank). A failure here is the flame graph's alone.
async function loadFlame(pid) {
  let diff;
  try {
    diff = await api.report('diff', { key: 'traceback', limit: FLAME_LIMIT, include: query().include, exclude: query().exclude, pid });
  } catch (error) {
    if (error.status === 0 || error.status === 401) throw error;
    check(pid);
    flame.update([], `No flame graph: ${error.message}`);
    $('flame-note').textContent = '';
    return;
  }
  check(pid);
  const stacks = stacksFromDiff(diff.stats);
  const changed = (diff.stats ?? []).filter((s) => s.size_diff).length;
  const more = changed === (diff.stats ?? []).length && diff.keys > changed;  // changed ones left out
  $('flame-note').textContent = diff.truncated
    ? `The ${formatCount(stacks.length)} stacks that changed most (the server stopped at its report size cap).`
    : more ? `The ${formatCount(stacks.length)} stacks that changed most (the page asks for at most ${FLAME_LIMIT}).`
    : `${formatCount(stacks.length)} stack${stacks.length === 1 ? '' : 's'} changed.`;
  flame.update(stacks);
}
function showFlamePanel() {
  $('flame-body').hidden = !state.flame;
  $('btn-flame').textContent = state.flame ? 'Hide' : 'Show';
}
$('btn-flame').addEventListener('click', () => {
  state.flame = !state.flame;
  const q = new URLSearchParams(location.hash.slice(1));
  state.flame ? q.delete('flame') : q.set('flame', '0');
  history.replaceState(null, '', `${location.pathname}${location.search}#${q}`);
  showFlamePanel();
  if (state.flame) refreshNow();
});

// The whole stacks behind one row: its own traceback when the key is a whole stack, else the
// stacks of the key=traceback diff that pass through this callsite.
async function loadStacks(stat) {
  if (query().key === 'traceback') return [{ ...stat, frames: stat.traceback ?? [] }];
  const diff = await api.report('diff', { key: 'traceback', limit: 1000, include: query().include, exclude: query().exclude, pid: state.pid });
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
    if (!(error instanceof Stale)) failed(error);
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
// start, stop and trim act on one process; in the merged view, on every process in turn.
async function postEach(route) {
  if (state.pid !== 'all') return [await api.post(route, { pid: state.pid })];
  const answers = [];
  for (const p of state.processes) answers.push(await api.post(route, { pid: String(p.pid) }));
  return answers;
}
$('btn-tracking').addEventListener('click', () => act(() => postEach(state.stats?.tracing ? 'stop' : 'start')));
$('btn-trim').addEventListener('click', () => act(async () => {
  const answers = await postEach('trim');
  const total = (field) => answers.reduce((s, r) => s + (r[field] ?? 0), 0);
  const [before, after] = [total('rss_before'), total('rss_after')];
  $('trim-result').textContent = `RSS ${formatSize(before)} → ${formatSize(after)} ` +
    `(${formatSize(after - before, true)}) at ${formatClock(Date.now())}` + (answers.length > 1 ? `, ${answers.length} processes` : '');
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
showFlamePanel();
refresh();
