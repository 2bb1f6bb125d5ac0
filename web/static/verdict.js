// The trend verdict of one callsite from its size across refreshes: "growing" (keeps
// rising), "plateaued" (rose, then flat: a cache warming up, not a leak), "stable",
// "shrinking", or "collecting" while there are too few samples to tell. Pure: no DOM.
//
// How it decides, given sizes s[0..n-1] (oldest first, one per refresh):
//   - Fewer than MIN_SAMPLES samples: "collecting".
//   - The recent window is the last W = clamp(n / 3, MIN_WINDOW, MAX_WINDOW) samples (at
//     least 4, at most 20: one minute at the default 3 s refresh). It grows with the
//     session so that one quiet spell between two requests of a real leak does not read
//     as a plateau, yet a cache that stopped a while ago is called plateaued soon enough.
//   - Its change is the least-squares slope over the window times its span, so that one
//     noisy sample (sampled mode) neither makes nor breaks a trend.
//   - "Material" means more than the tolerance: the larger of the caller's noise (the
//     sampling interval in sampled mode: one sample weighs about that much), 1% of the
//     largest size seen, and 64 bytes.
//   - growing:   recent change > tolerance.
//   - shrinking: recent change < -tolerance.
//   - plateaued: recent change within tolerance, every recent sample within tolerance of
//                the window's mean (truly flat), and before the window the size rose by
//                more than twice the tolerance (from its lowest to the window's start).
//   - stable:    anything else (flat all along, or wobbling without a trend).

export const MIN_SAMPLES = 5;
export const MIN_WINDOW = 4;
export const MAX_WINDOW = 20;
export const REL_TOLERANCE = 0.01;
export const MIN_TOLERANCE = 64;

export const VERDICTS = ['growing', 'plateaued', 'stable', 'shrinking', 'collecting'];

// Fitted change from the first to the last point of ys (least squares, x = 0..n-1).
function fittedChange(ys) {
  const n = ys.length;
  const meanX = (n - 1) / 2;
  const meanY = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  });
  return den === 0 ? 0 : (num / den) * (n - 1);
}

export function windowSize(n) {
  return Math.min(MAX_WINDOW, Math.max(MIN_WINDOW, Math.floor(n / 3)));
}

export function tolerance(sizes, noise = 0) {
  const largest = Math.max(...sizes.map(Math.abs));
  return Math.max(noise, REL_TOLERANCE * largest, MIN_TOLERANCE);
}

// sizes: numbers, oldest first. options.noise: bytes one sample can be off by.
export function classify(sizes, { noise = 0 } = {}) {
  if (!Array.isArray(sizes) || sizes.length < MIN_SAMPLES) return 'collecting';
  const n = sizes.length;
  const w = windowSize(n);
  const recent = sizes.slice(n - w);
  const earlier = sizes.slice(0, n - w);
  const tol = tolerance(sizes, noise);

  const change = fittedChange(recent);
  if (change > tol) return 'growing';
  if (change < -tol) return 'shrinking';

  const mean = recent.reduce((a, b) => a + b, 0) / w;
  const flat = recent.every((s) => Math.abs(s - mean) <= tol);
  const rose = earlier.length > 0 && recent[0] - Math.min(...earlier) > 2 * tol;
  return flat && rose ? 'plateaued' : 'stable';
}
