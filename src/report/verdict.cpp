// The verdict rule on one series (growing, plateaued, stable, shrinking, unknown), measured
// against the program's work, its reasons (retention, idle time), its merge across processes
// and its renderings. The only implementation of the rule: the dashboard and liveheap-watch
// show the verdicts the server computes here.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// A callsite that rose and holds its level is bounded (plateaued) once, while its size held,
// it allocated (and so freed) more than this fraction of what it gained: an LRU at capacity.
constexpr double kVerdictChurnFraction = 0.1;

// Least-squares slope of ys over xs, in y units per x unit (0 when every x is equal).
double fitted_slope(const double* xs, const std::int64_t* ys, std::size_t n) {
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < n; ++i) mean_x += xs[i] - xs[0], mean_y += static_cast<double>(ys[i]);
  mean_x /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = xs[i] - xs[0] - mean_x;
    num += dx * (static_cast<double>(ys[i]) - mean_y);
    den += dx * dx;
  }
  return den == 0 ? 0 : num / den;
}

// max(noise, `errors` x estimate_error, 1% of the largest |size|, 64 bytes).
double tolerance_of(const std::vector<std::int64_t>& sizes, std::uint64_t noise, double estimate_error,
                    double errors) {
  std::int64_t largest = 0;
  for (std::int64_t s : sizes) largest = std::max(largest, s < 0 ? -s : s);
  return std::max({static_cast<double>(noise), errors * estimate_error,
                   kVerdictRelTolerance * static_cast<double>(largest), kVerdictMinTolerance});
}

// Sampled mode: one standard error of the estimate of the series at its largest, s·√(N(1−p)/p)
// for N blocks of s bytes on average, each sampled with p = 1 − e^(−s/I) (docs/ecosystem.md):
// ~√(S·I) for blocks much smaller than the interval I, ~0 for blocks much larger.
double estimate_error_of(const KeySeries& series, std::uint64_t interval) {
  if (interval == 0 || series.counts.size() != series.sizes.size()) return 0;
  double error = 0;
  for (std::size_t i = 0; i < series.sizes.size(); ++i) {
    const double bytes = std::fabs(static_cast<double>(series.sizes[i]));
    const double blocks = static_cast<double>(series.counts[i]);
    if (blocks < 1 || bytes <= 0) continue;
    const double average = bytes / blocks;
    const double p = -std::expm1(-average / static_cast<double>(interval));
    if (p > 0) error = std::max(error, average * std::sqrt(blocks * (1 - p) / p));
  }
  return error;
}

// Seconds from the last point that set a new high to the last point.
double since_last_high_s(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes) {
  std::size_t last_high = 0;
  std::int64_t high = sizes[0];
  for (std::size_t i = 1; i < sizes.size(); ++i)
    if (sizes[i] > high) high = sizes[i], last_high = i;
  return static_cast<double>(t_ms.back() - t_ms[last_high]) / 1000.0;
}

// The reasons, whatever the trend: retention and idle time over the whole window.
void add_reasons(Verdict& v, const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 const std::vector<std::int64_t>& allocated) {
  const std::size_t n = sizes.size();
  if (allocated.empty()) return;
  const double in_window = static_cast<double>(allocated[n - 1] - allocated[0]);
  v.allocated = std::max(0.0, in_window);
  // The live bytes gained over the window were allocated in it and are still live (a lower
  // bound: a block freed and replaced counts once); over what was allocated, a fraction.
  if (in_window > 0)
    v.retention = std::clamp(static_cast<double>(sizes[n - 1] - sizes[0]) / in_window, 0.0, 1.0);
  for (std::size_t i = n - 1; i >= 1; --i)
    if (allocated[i] > allocated[i - 1]) {
      v.idle_s = static_cast<double>(t_ms[n - 1] - t_ms[i]) / 1000.0;
      break;
    }
}

// The series on the work axis: the points whose interval had work, at the working time
// elapsed (an idle interval adds none). What changed while idle counts at the last such point.
struct Worked {
  std::vector<double> x;        // working milliseconds since the first point
  std::vector<std::int64_t> y;  // sizes
  std::vector<double> own;      // the series' cumulative allocated bytes (0s when not recorded)
  std::vector<double> process;  // the process's cumulative work (one unit an interval when not recorded)
};

// What `work` counts: bytes the process allocated (an interval is work above noise), or the
// requests a route handled (an interval is work when it saw one).
enum class Axis { allocated_bytes, requests };

Worked on_work(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
               const std::vector<std::int64_t>& allocated, const std::vector<std::int64_t>& work,
               std::uint64_t noise, std::int64_t interval_ms, Axis axis) {
  const auto own = [&](std::size_t i) { return allocated.empty() ? 0.0 : static_cast<double>(allocated[i]); };
  const auto process = [&](std::size_t i) {
    return work.empty() ? static_cast<double>(i) : static_cast<double>(work[i]);
  };
  Worked w;
  w.x.push_back(0);
  w.y.push_back(sizes[0]);
  w.own.push_back(own(0));
  w.process.push_back(process(0));
  double clock = 0;
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    const auto axis_moved = [&] {
      return axis == Axis::requests
                 ? work[i] > work[i - 1]
                 : !idle_between(work[i - 1], work[i], t_ms[i] - t_ms[i - 1], interval_ms, noise);
    };
    const bool worked =
        work.empty() || axis_moved() || (!allocated.empty() && allocated[i] > allocated[i - 1]);
    if (!worked) continue;
    clock += static_cast<double>(t_ms[i] - t_ms[i - 1]);
    w.x.push_back(clock);
    w.y.push_back(sizes[i]);
    w.own.push_back(own(i));
    w.process.push_back(process(i));
  }
  w.y.back() = sizes.back();
  w.own.back() = own(sizes.size() - 1);
  w.process.back() = process(sizes.size() - 1);
  return w;
}

// Whether the series rose in steps and is still rising: 3 or more steps (each a new level
// above the last by more than `tolerance`), the latest no longer ago, in working time, than
// kVerdictStepGapFactor x the longest time between two of them. A leak hit by one request
// in ten rises so; a cache that filled stays flat for longer than it took to fill.
bool still_stepping(const Worked& w, double tolerance) {
  std::vector<std::size_t> steps;
  double level = static_cast<double>(w.y[0]);
  for (std::size_t j = 1; j < w.y.size(); ++j)
    if (static_cast<double>(w.y[j]) > level + tolerance)
      steps.push_back(j), level = static_cast<double>(w.y[j]);
  if (steps.size() < 3) return false;
  double longest = 0;
  for (std::size_t k = 1; k < steps.size(); ++k)
    longest = std::max(longest, w.x[steps[k]] - w.x[steps[k - 1]]);
  return w.x.back() - w.x[steps.back()] <= kVerdictStepGapFactor * longest;
}

// A rise that ended at the series' high: from `from` (the last point at its low) to `to` (the
// first point from which it held within `hold` of its last size).
struct Rise {
  std::size_t from = 0, to = 0;
  double gained = 0;
};

std::optional<Rise> rise_to_the_end(const Worked& w, double tolerance, double hold) {
  const std::size_t m = w.y.size();
  const double last = static_cast<double>(w.y.back());
  const double high = static_cast<double>(*std::max_element(w.y.begin(), w.y.end()));
  const double low = static_cast<double>(*std::min_element(w.y.begin(), w.y.end()));
  if (last - low <= 2 * tolerance || high - last > hold) return std::nullopt;
  Rise r;
  r.to = m - 1;
  while (r.to > 0 && std::fabs(static_cast<double>(w.y[r.to - 1]) - last) <= hold) --r.to;
  r.from = r.to;  // the low lies before r.to: every point from r.to on is near `last`
  while (r.from > 0 && static_cast<double>(w.y[r.from]) > low + tolerance) --r.from;
  r.gained = last - low;
  return r;
}

// Evidence that a callsite that rose and stopped is bounded: since it reached its level it
// turned part of its memory over (allocated, and so freed, at least kVerdictChurnFraction of
// what it gained while its size held: an LRU at capacity), or the program did at least as
// much work again as it did during the rise (a cache that holds all its keys).
bool bounded(const Worked& w, const Rise& r, double tolerance) {
  const std::size_t m = w.y.size();
  if (r.to + 1 >= m) return false;  // no work seen since it reached its level
  const double churned = w.own[m - 1] - w.own[r.to];
  if (churned > std::max(tolerance, kVerdictChurnFraction * r.gained)) return true;
  const double during = w.process[r.to] - w.process[r.from];
  const double after = w.process[m - 1] - w.process[r.to];
  return after > 0 && after >= during;
}

Verdict judge(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
              const std::vector<std::int64_t>& allocated, const std::vector<std::int64_t>& work,
              std::uint64_t noise, double estimate_error, std::int64_t interval_ms, Axis axis) {
  Verdict v;
  const std::size_t n = sizes.size();
  if (n == 0 || t_ms.size() != n || (!allocated.empty() && allocated.size() != n) ||
      (!work.empty() && work.size() != n))
    return v;
  add_reasons(v, t_ms, sizes, allocated);
  const Worked w = on_work(t_ms, sizes, allocated, work, noise, interval_ms, axis);
  const std::size_t m = w.y.size();
  v.work_points = m - 1;
  if (m < 2) return v;  // no work seen at all: unknown
  const std::size_t window = std::min(m, std::clamp(m / 3, kVerdictMinWindow, kVerdictMaxWindow));
  const std::size_t first = m - window;
  const double slope = fitted_slope(&w.x[first], &w.y[first], window);  // bytes per working ms
  const double change = slope * (w.x[m - 1] - w.x[first]);
  v.window = window;
  v.tolerance = tolerance_of(sizes, noise, estimate_error, kVerdictEstimateErrors);
  // A trend is judged on a wider band in sampled mode: over a window, the samples behind
  // the estimate are replaced, and it wanders further than two points apart.
  const double trend = tolerance_of(sizes, noise, estimate_error, kVerdictTrendErrors);
  // Holding a level is judged on a narrower band in sampled mode: a leak's estimate rises
  // steadily within the tolerance for several points, a full cache's wobbles.
  const double hold = tolerance_of(sizes, noise, estimate_error, kVerdictHoldErrors);
  v.growth_per_min = slope * 60000.0;
  v.since_last_growth_s = since_last_high_s(t_ms, sizes);
  const bool enough = m >= kVerdictMinPoints;
  if (enough && change > trend) return v.trend = Trend::growing, v;
  if (enough && change < -trend) return v.trend = Trend::shrinking, v;
  if (still_stepping(w, v.tolerance)) return v.trend = Trend::growing, v;
  // It rose and holds its high: a cache only with evidence of a bound; without it, a leak
  // candidate however long the program then idled (however few points of work it took).
  if (const std::optional<Rise> rise = rise_to_the_end(w, v.tolerance, hold)) {
    v.trend = bounded(w, *rise, v.tolerance) ? Trend::plateaued : Trend::growing;
    if (v.trend == Trend::growing && v.growth_per_min <= 0 && w.x[rise->to] > w.x[rise->from])
      v.growth_per_min = rise->gained / (w.x[rise->to] - w.x[rise->from]) * 60000.0;
    return v;
  }
  if (!enough) {  // not enough work seen to call it anything else
    v.trend = Trend::unknown;
    return v;
  }
  const auto window_begin = w.y.begin() + static_cast<std::ptrdiff_t>(first);
  const double mean = std::accumulate(window_begin, w.y.end(), 0.0) / static_cast<double>(window);
  const bool flat = std::all_of(window_begin, w.y.end(), [&](std::int64_t s) {
    return std::fabs(static_cast<double>(s) - mean) <= v.tolerance;
  });
  // Held flat below an earlier high: it gave memory back, a bound of its own.
  const bool rose =
      first > 0 &&
      static_cast<double>(w.y[first] - *std::min_element(w.y.begin(), window_begin)) > 2 * v.tolerance;
  v.trend = flat && rose ? Trend::plateaued : Trend::stable;
  return v;
}

}  // namespace

std::string_view to_string(Trend trend) noexcept {
  switch (trend) {
    case Trend::growing: return "growing";
    case Trend::plateaued: return "plateaued";
    case Trend::stable: return "stable";
    case Trend::shrinking: return "shrinking";
    case Trend::unknown: break;
  }
  return "unknown";
}

std::optional<Trend> parse_trend(std::string_view text) noexcept {
  for (Trend t : {Trend::growing, Trend::plateaued, Trend::stable, Trend::shrinking, Trend::unknown})
    if (to_string(t) == text) return t;
  return std::nullopt;
}

Verdict classify(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 const std::vector<std::int64_t>& allocated, const std::vector<std::int64_t>& work,
                 std::uint64_t noise, double estimate_error, std::int64_t interval_ms) {
  return judge(t_ms, sizes, allocated, work, noise, estimate_error, interval_ms, Axis::allocated_bytes);
}

Verdict classify_on_requests(const History& history, const KeySeries& series,
                             const std::vector<std::int64_t>& requests) {
  return judge(point_times(history), series.sizes, series.allocated, requests, history.noise,
               estimate_error_of(series, history.noise), static_cast<std::int64_t>(history.interval_s * 1000),
               Axis::requests);
}

Verdict classify(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 std::uint64_t noise) {
  return classify(t_ms, sizes, {}, {}, noise);
}

Verdict classify(const History& history, const KeySeries& series) {
  // A history without the work's figures (built by hand, or by an older recorder): every
  // interval counts as work, as the rule on time did.
  std::vector<std::int64_t> work = point_work(history);
  if (std::all_of(work.begin(), work.end(), [](std::int64_t w) { return w == 0; })) work.clear();
  return classify(point_times(history), series.sizes, series.allocated, work, history.noise,
                  estimate_error_of(series, history.noise),
                  static_cast<std::int64_t>(history.interval_s * 1000));
}

void merge_verdicts(Verdict& into, const Verdict& other) {
  const double retained =
      into.retention.value_or(0) * into.allocated + other.retention.value_or(0) * other.allocated;
  const double allocated = into.allocated + other.allocated;
  std::optional<double> idle = into.idle_s;
  if (other.idle_s) idle = idle ? std::min(*idle, *other.idle_s) : *other.idle_s;
  if (into.trend != other.trend) {
    into = Verdict{};
  } else if (into.trend != Trend::unknown) {
    into.growth_per_min += other.growth_per_min;
    into.since_last_growth_s = std::min(into.since_last_growth_s, other.since_last_growth_s);
  }
  into.allocated = allocated;
  into.retention =
      allocated > 0 ? std::optional<double>(std::clamp(retained / allocated, 0.0, 1.0)) : std::nullopt;
  into.idle_s = idle;
}

void add_verdict_json(nlohmann::json& stat, const Verdict& verdict) {
  stat["verdict"] = to_string(verdict.trend);
  if (verdict.trend == Trend::unknown) {
    stat["growth_per_min"] = nullptr;
    stat["since_last_growth_s"] = nullptr;
  } else {
    stat["growth_per_min"] = std::round(verdict.growth_per_min);
    stat["since_last_growth_s"] = verdict.since_last_growth_s;
  }
  if (verdict.retention) stat["retention"] = std::round(*verdict.retention * 10000) / 10000;
  else stat["retention"] = nullptr;
  if (verdict.idle_s) stat["idle_s"] = *verdict.idle_s;
  else stat["idle_s"] = nullptr;
  stat["allocated_in_window"] = std::round(verdict.allocated);
}

Verdict verdict_from_json(const nlohmann::json& stat) {
  Verdict v;
  if (!stat.is_object()) return v;
  const auto number = [&](const char* field) -> std::optional<double> {
    const auto it = stat.find(field);
    return it != stat.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
  };
  const auto verdict = stat.find("verdict");
  if (verdict != stat.end() && verdict->is_string())
    v.trend = parse_trend(verdict->get<std::string>()).value_or(Trend::unknown);
  v.growth_per_min = number("growth_per_min").value_or(0);
  v.since_last_growth_s = number("since_last_growth_s").value_or(0);
  v.retention = number("retention");
  v.idle_s = number("idle_s");
  v.allocated = number("allocated_in_window").value_or(0);
  return v;
}

std::string verdict_text(const Verdict& verdict) {
  std::string text = " [" + std::string(to_string(verdict.trend));
  if (verdict.trend == Trend::unknown) return text + "]";  // the JSON still carries the reasons
  char buffer[48];
  if (verdict.retention) {
    const double percent = *verdict.retention * 100;
    if (percent > 0 && percent < 0.5) std::snprintf(buffer, sizeof buffer, ", retains <1%%");
    else std::snprintf(buffer, sizeof buffer, ", retains %.0f%%", percent);
    text += buffer;
  } else {
    text += ", allocated nothing";
  }
  if (verdict.idle_s) {
    std::snprintf(buffer, sizeof buffer, ", idle %.0f s", *verdict.idle_s);
    text += buffer;
  }
  return text + "]";
}

std::vector<std::int64_t> point_times(const History& history) {
  std::vector<std::int64_t> times;
  times.reserve(history.points.size());
  for (const HistoryPoint& p : history.points) times.push_back(p.t_ms);
  return times;
}

std::vector<std::int64_t> point_work(const History& history) {
  std::vector<std::int64_t> work;
  work.reserve(history.points.size());
  for (const HistoryPoint& p : history.points) work.push_back(p.allocated);
  return work;
}

std::vector<std::int64_t> route_request_counts(const History& history, std::string_view route) {
  std::vector<std::int64_t> counts;
  counts.reserve(history.points.size());
  for (const HistoryPoint& p : history.points) {
    std::int64_t n = 0;
    for (const auto& [name, requests] : p.route_requests)
      if (name == route) n = static_cast<std::int64_t>(requests);
    counts.push_back(n);
  }
  return counts;
}

std::vector<bool> idle_points(const History& history) {
  std::vector<bool> idle(history.points.size(), false);
  if (std::all_of(history.points.begin(), history.points.end(),
                  [](const HistoryPoint& p) { return p.allocated == 0; }))
    return idle;  // no work recorded: nothing to fold
  for (std::size_t i = 1; i < idle.size(); ++i)
    idle[i] = idle_between(history.points[i - 1].allocated, history.points[i].allocated,
                           history.points[i].t_ms - history.points[i - 1].t_ms,
                           static_cast<std::int64_t>(history.interval_s * 1000), history.noise);
  return idle;
}

LIVEHEAP_NAMESPACE_END
