// Number formatting for the dashboard, matching tracemalloc's text output so the page and
// `curl .../diff` read the same ("38.5 MiB", "+25.6 MiB", "+0 B").

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

// Python's "%.0f"/"%.1f" round half to even; toFixed rounds half away from zero. Sizes
// are integers and KiB steps are exact in binary, so ties (e.g. 2.5 KiB) really occur.
function fixed(value, digits) {
  const scale = 10 ** digits;
  const scaled = value * scale;
  const floor = Math.floor(scaled);
  const rest = scaled - floor;
  let rounded;
  if (Math.abs(rest - 0.5) < 1e-9) rounded = floor % 2 === 0 ? floor : floor + 1;
  else rounded = Math.round(scaled);
  return (rounded / scale).toFixed(digits);
}

// tracemalloc._format_size: at most 4 significant digits, a unit from B to TiB.
export function formatSize(bytes, signed = false) {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '–';
  let size = bytes;
  for (const unit of UNITS) {
    if (Math.abs(size) < 100 && unit !== 'B') return withSign(fixed(size, 1), signed) + ' ' + unit;
    if (Math.abs(size) < 10 * 1024 || unit === 'TiB') return withSign(fixed(size, 0), signed) + ' ' + unit;
    size /= 1024;
  }
  return '–';  // unreachable: TiB always returns
}

function withSign(text, signed) {
  return signed && !text.startsWith('-') ? '+' + text : text;
}

// Block counts: grouped digits, and a sign when asked ("+4", "-12", "+0").
export function formatCount(count, signed = false) {
  if (typeof count !== 'number' || !Number.isFinite(count)) return '–';
  const text = Math.round(count).toLocaleString('en-US');
  return signed && count >= 0 ? '+' + text : text;
}

// "12:03:44" in the viewer's local time.
export function formatClock(ms) {
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

// "5 s", "3 min", "2 h": how long ago, for "baseline taken 3 min ago".
export function formatAge(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

// What /stats' tracker_memory_cap says once the cap was reached, as the text reports say it
// ("cap 24.0 MiB reached: 121,332 folded (7583 KiB), 0 dropped (0 B)"); '' before that.
export function formatCap(cap) {
  if (!cap || !cap.reached) return '';
  return `cap ${formatSize(cap.max_bytes)} reached: ${formatCount(cap.folded_blocks)} folded ` +
    `(${formatSize(cap.folded_bytes)}), ${formatCount(cap.dropped_blocks)} dropped (${formatSize(cap.dropped_bytes)})`;
}
