// The verdict rule on one series (growing, plateaued, stable, shrinking, unknown) and its
// renderings. The only implementation of the rule: the dashboard and liveheap-watch show the
// verdicts the server computes here.
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

// Least-squares slope of ys over xs, in y units per x unit (0 when every x is equal).
double fitted_slope(const std::int64_t* xs, const std::int64_t* ys, std::size_t n) {
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < n; ++i) mean_x += static_cast<double>(xs[i] - xs[0]), mean_y += static_cast<double>(ys[i]);
  mean_x /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(xs[i] - xs[0]) - mean_x;
    num += dx * (static_cast<double>(ys[i]) - mean_y);
    den += dx * dx;
  }
  return den == 0 ? 0 : num / den;
}

double tolerance_of(const std::vector<std::int64_t>& sizes, std::uint64_t noise) {
  std::int64_t largest = 0;
  for (std::int64_t s : sizes) largest = std::max(largest, s < 0 ? -s : s);
  return std::max({static_cast<double>(noise), kVerdictRelTolerance * static_cast<double>(largest),
                   kVerdictMinTolerance});
}

// Seconds from the last point that set a new high to the last point.
double since_last_high_s(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes) {
  std::size_t last_high = 0;
  std::int64_t high = sizes[0];
  for (std::size_t i = 1; i < sizes.size(); ++i)
    if (sizes[i] > high) high = sizes[i], last_high = i;
  return static_cast<double>(t_ms.back() - t_ms[last_high]) / 1000.0;
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
                 std::uint64_t noise) {
  Verdict v;
  const std::size_t n = std::min(t_ms.size(), sizes.size());
  if (n < kVerdictMinPoints || t_ms.size() != sizes.size()) return v;
  const std::size_t w = std::clamp(n / 3, kVerdictMinWindow, kVerdictMaxWindow);
  const std::size_t first = n - w;
  const double slope = fitted_slope(&t_ms[first], &sizes[first], w);  // bytes per ms
  const double change = slope * static_cast<double>(t_ms[n - 1] - t_ms[first]);
  v.window = w;
  v.tolerance = tolerance_of(sizes, noise);
  v.growth_per_min = slope * 60000.0;
  v.since_last_growth_s = since_last_high_s(t_ms, sizes);
  if (change > v.tolerance) return v.trend = Trend::growing, v;
  if (change < -v.tolerance) return v.trend = Trend::shrinking, v;
  const double mean =
      std::accumulate(sizes.begin() + static_cast<std::ptrdiff_t>(first), sizes.end(), 0.0) /
      static_cast<double>(w);
  const bool flat = std::all_of(sizes.begin() + static_cast<std::ptrdiff_t>(first), sizes.end(),
                                [&](std::int64_t s) { return std::fabs(static_cast<double>(s) - mean) <= v.tolerance; });
  const bool rose =
      first > 0 && static_cast<double>(sizes[first] - *std::min_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(first))) >
                       2 * v.tolerance;
  v.trend = flat && rose ? Trend::plateaued : Trend::stable;
  return v;
}

void add_verdict_json(nlohmann::json& stat, const Verdict& verdict) {
  stat["verdict"] = to_string(verdict.trend);
  if (verdict.trend == Trend::unknown) {
    stat["growth_per_min"] = nullptr;
    stat["since_last_growth_s"] = nullptr;
    return;
  }
  stat["growth_per_min"] = std::round(verdict.growth_per_min);
  stat["since_last_growth_s"] = verdict.since_last_growth_s;
}

std::string verdict_text(const Verdict& verdict) {
  std::string text = " [" + std::string(to_string(verdict.trend));
  if (verdict.trend != Trend::unknown) {
    text += ", " + format_size(verdict.growth_per_min, true) + "/min";
    char since[32];
    std::snprintf(since, sizeof since, "%.0f", verdict.since_last_growth_s);
    text += ", last grew " + std::string(since) + " s ago";
  }
  return text + "]";
}

std::vector<std::int64_t> point_times(const History& history) {
  std::vector<std::int64_t> times;
  times.reserve(history.points.size());
  for (const HistoryPoint& p : history.points) times.push_back(p.t_ms);
  return times;
}

LIVEHEAP_NAMESPACE_END
