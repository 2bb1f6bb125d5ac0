// Time series for the charts. The server's history (GET history) is the source: fromServer
// turns its answer into the page's series. History keeps what the page polled itself, for
// when the server has none (history off, an older server, pid=all: the route answers for one
// process). Capped in samples per key and in keys, so an open tab stays small.

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

// GET history's JSON as the page's series: the memory chart's (heap = traced, peak, rss;
// rss -1 is unknown and left out) and each stat's sizes by `id(stat)` (the table's row id).
// intervalMs: how often the server adds a point (0: its history is off).
export function fromServer(answer, id) {
  const points = Array.isArray(answer?.points) ? answer.points : [];
  const memory = { heap: [], peak: [], rss: [] };
  for (const p of points) {
    memory.heap.push({ t: p.t_ms, v: p.traced });
    memory.peak.push({ t: p.t_ms, v: p.peak });
    if (p.rss >= 0) memory.rss.push({ t: p.t_ms, v: p.rss });
  }
  const sites = new Map();
  for (const stat of Array.isArray(answer?.stats) ? answer.stats : []) {
    const series = Array.isArray(stat.series) ? stat.series : [];
    // idle: the interval ending at this point had no work (the server's call, GET history's
    // points[].idle): the sparkline folds such stretches, as the verdict does.
    sites.set(id(stat), series.map(([t, v], i) => ({ t, v, idle: points[i]?.idle === true })));
  }
  return { intervalMs: Math.max(0, Number(answer?.interval_s) || 0) * 1000, points: points.length, memory, sites };
}
