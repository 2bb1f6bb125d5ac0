// Time series kept by the page for the session: per-callsite sizes (sparklines, verdicts)
// and the heap/RSS chart. Capped in samples per key and in keys, so an open tab stays small.

export class History {
  constructor({ maxSamples = 240, maxKeys = 2000 } = {}) {
    this.maxSamples = maxSamples;
    this.maxKeys = maxKeys;
    this.series = new Map();  // key -> [{t, v}], oldest first; Map order = least recently seen first
  }

  // entries: iterable of [key, value], all observed at time t (ms).
  record(t, entries) {
    for (const [key, v] of entries) {
      const points = this.series.get(key) ?? [];
      this.series.delete(key);  // re-insert: keeps the Map ordered by last sighting
      points.push({ t, v });
      if (points.length > this.maxSamples) points.splice(0, points.length - this.maxSamples);
      this.series.set(key, points);
    }
    while (this.series.size > this.maxKeys) this.series.delete(this.series.keys().next().value);
  }

  points(key) {
    return this.series.get(key) ?? [];
  }

  values(key) {
    return this.points(key).map((p) => p.v);
  }

  clear() {
    this.series.clear();
  }
}
