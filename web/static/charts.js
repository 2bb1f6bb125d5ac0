// Inline SVG drawings (no libraries, nothing fetched): a callsite's sparkline and the
// traced heap / peak / RSS chart. Both return markup made of numbers only.
import { formatClock } from './format.js';

const round = (x) => Math.round(x * 10) / 10;
const escapeText = (text) => String(text).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);

// Points drawn against the program's work: a run of idle points ({idle: true}: nothing
// allocated in the process) is folded into the point before it, so a flat idle stretch is not
// drawn as a plateau; a last idle point whose size differs is kept (what changed while idle).
// Returns the kept points and the indexes (in them) after which a stretch was folded.
export function foldIdle(points) {
  const kept = [];
  const folds = [];
  points.forEach((p, i) => {
    const changedAtTheEnd = i === points.length - 1 && kept.length > 0 && p.v !== kept[kept.length - 1].v;
    if (p.idle && kept.length > 0 && !changedAtTheEnd) {
      if (folds[folds.length - 1] !== kept.length - 1) folds.push(kept.length - 1);
      return;
    }
    kept.push(p);
  });
  return { kept, folds: folds.filter((f) => f < kept.length - 1) };
}

// points: [{t, v, idle?}] oldest first. The vertical range starts at the series' minimum so a
// plateau and a climb look different even when both sit on a large size. Idle stretches are
// folded (foldIdle) and marked with a dashed tick.
export function sparkline(allPoints, { width = 120, height = 28, verdict = 'stable' } = {}) {
  const { kept: points, folds } = foldIdle(allPoints);
  // data-points: every point of the series, folded or drawn.
  const svg = `<svg class="spark spark-${verdict}" data-points="${allPoints.length}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" aria-hidden="true">`;
  if (points.length < 2) return `${svg}<line class="spark-empty" x1="2" x2="${width - 2}" y1="${height / 2}" y2="${height / 2}"/></svg>`;
  const values = points.map((p) => p.v);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const x = (i) => round(2 + (i * (width - 4)) / (points.length - 1));
  const y = (v) => round(hi === lo ? height / 2 : height - 3 - ((v - lo) * (height - 6)) / (hi - lo));
  const line = values.map((v, i) => `${x(i)},${y(v)}`).join(' ');
  const area = `2,${height} ${line} ${width - 2},${height}`;
  const last = values.length - 1;
  const idle = folds.map((i) => {
    const at = round((x(i) + x(i + 1)) / 2);
    return `<line class="spark-idle" x1="${at}" x2="${at}" y1="2" y2="${height - 2}"/>`;
  }).join('');
  return `${svg}<polygon class="spark-area" points="${area}"/><polyline class="spark-line" points="${line}"/>${idle}` +
    `<circle class="spark-dot" cx="${x(last)}" cy="${y(values[last])}" r="2.2"/></svg>`;
}

// Axis labels: round steps in one unit ("8 MiB", "1.5 GiB"), shorter than tracemalloc's.
function axisSize(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i++; }
  return `${Number(bytes.toFixed(1))} ${units[i]}`;
}

// A 1-2-4-8 step that gives about `ticks` gridlines over [0, hi].
function niceStep(hi, ticks) {
  const raw = hi / ticks;
  const magnitude = 2 ** Math.floor(Math.log2(raw || 1));  // sizes: powers of two read better
  for (const m of [1, 2, 4, 8]) if (magnitude * m >= raw) return magnitude * m;
  return magnitude * 8;
}

// series: [{cls, points: [{t, v}]}]. Zero-based so RSS vs heap reads as a ratio. Drawn at
// the container's pixel width (redrawn on resize) so text is never stretched.
// `empty`: what an empty chart says.
export function lineChart(series, { width = 900, height = 240, empty = 'collecting samples…' } = {}) {
  const pad = { left: 74, right: 16, top: 12, bottom: 26 };
  const drawn = series.filter((s) => s.points.length > 1);  // one point draws no line
  const all = drawn.flatMap((s) => s.points);
  const head = `<svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="traced heap, peak and RSS over time">`;
  if (drawn.length === 0) {
    return `${head}<text class="chart-empty" x="${width / 2}" y="${height / 2}" text-anchor="middle">${escapeText(empty)}</text></svg>`;
  }
  const t0 = Math.min(...all.map((p) => p.t));
  const t1 = Math.max(t0 + 1, ...all.map((p) => p.t));
  const step = niceStep(Math.max(1, ...all.map((p) => p.v)), 4);
  const top = step * Math.ceil(Math.max(1, ...all.map((p) => p.v)) / step);
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const x = (t) => round(pad.left + ((t - t0) * plotW) / (t1 - t0));
  const y = (v) => round(pad.top + plotH - (v * plotH) / top);

  let grid = '';
  for (let v = 0; v <= top + 1e-6; v += step) {
    grid += `<line class="grid" x1="${pad.left}" x2="${width - pad.right}" y1="${y(v)}" y2="${y(v)}"/>` +
      `<text class="axis" x="${pad.left - 8}" y="${y(v) + 4}" text-anchor="end">${axisSize(v)}</text>`;
  }
  let previous = '';
  for (const t of [t0, (t0 + t1) / 2, t1]) {
    const anchor = t === t0 ? 'start' : t === t1 ? 'end' : 'middle';
    if (formatClock(t) === previous) continue;  // a span of a second or two: one label is enough
    previous = formatClock(t);
    grid += `<text class="axis" x="${x(t)}" y="${height - 6}" text-anchor="${anchor}">${formatClock(t)}</text>`;
  }
  const lines = drawn.map((s) =>
    `<polyline class="series ${s.cls}" points="${s.points.map((p) => `${x(p.t)},${y(p.v)}`).join(' ')}"/>`).join('');
  return `${head}${grid}${lines}</svg>`;
}
