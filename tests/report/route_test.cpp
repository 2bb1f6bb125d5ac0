// Reports by the route of the request that allocated (the stack's outermost frame), on
// hand-built snapshots: key=route, route= globs, pprof's label, and the /routes value.
#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/pprof.hpp"
#include "liveheap/report.hpp"
#include "liveheap/route_report.hpp"

namespace liveheap {
namespace {

using hand_built::kMalloc;
using hand_built::snap;
using hand_built::user;

Trace in_route(const char* route, unsigned line, std::int64_t size) {
  return {Traceback{kMalloc, user("app.cpp", line), route_frame(route)}, size, 1};
}

Snapshot three_routes() {
  return snap({in_route("GET /figure", 10, 6000),
               in_route("GET /figure", 11, 100),
               in_route("POST /upload", 10, 500),
               {Traceback{kMalloc, user("app.cpp", 12)}, 7, 1}});
}

TEST(RouteKey, GroupsTracesByTheirRequestsRouteAndOutsideAnyAsNoRequest) {
  const std::vector<Statistic> stats = three_routes().statistics(KeyType::route);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(format_statistic(stats[0], KeyType::route), "GET /figure: size=6100 B, count=2, average=3050 B");
  EXPECT_EQ(format_key(stats[1].traceback, KeyType::route), "POST /upload");
  EXPECT_EQ(format_key(stats[2].traceback, KeyType::route), kNoRequest);
}

TEST(RouteKey, ARouteFrameIsNeverTheLineOfAStatistic) {
  const std::vector<Statistic> stats = three_routes().statistics(KeyType::line);
  for (const Statistic& s : stats) EXPECT_EQ(s.traceback[0].file, "app.cpp");
}

TEST(RouteFilter, KeepsTheTracesOfTheMatchingRoutesOnly) {
  const Snapshot kept = three_routes().filter_routes({"GET *"});
  ASSERT_EQ(kept.traces().size(), 2u);
  EXPECT_EQ(kept.total_size(), 6100);
  EXPECT_EQ(three_routes().filter_routes({"GET *", "(no request)"}).traces().size(), 3u);
  EXPECT_THROW(three_routes().filter_routes({"["}), std::invalid_argument);
  ReportRequest request;
  request.key = KeyType::route;
  request.routes = {"POST*"};
  const Report report = make_report(three_routes(), request);
  ASSERT_EQ(report.lines.size(), 1u);
  EXPECT_EQ(report.lines[0].key, "POST /upload");
  EXPECT_EQ(report_from_json(std::string_view(to_json(report))).request.routes, request.routes);
}

TEST(RoutePprof, ASampleCarriesItsRouteAsALabelNotALocation) {
  const std::string profile = pprof_profile(three_routes(), {}, ProfileView::heap);
  EXPECT_NE(profile.find("GET /figure"), std::string::npos);
  EXPECT_NE(profile.find("route"), std::string::npos);
  EXPECT_EQ(profile.find(std::string(kRouteModule)), std::string::npos);
}

RouteReport two_routes() {
  RouteReport r;
  r.since_baseline = true;
  r.routes = {{"GET /ok", 10, 0, 0, 5000, 0, 0, 0, 10, "unknown"},
              {"POST /karyogram", 20, 130023424, 40, 140000000, 0, 0, 129761280, 20, "growing"}};
  finish(r);
  return r;
}

TEST(RouteReports, ARequestRetainsTheGrowthOverItsRoutesRequests) {
  const RouteReport r = two_routes();
  ASSERT_EQ(r.routes[0].route, "POST /karyogram");  // the most retained first
  EXPECT_EQ(r.routes[0].retained_per_request, 129761280.0 / 20);
  EXPECT_EQ(r.routes[0].allocated_per_request, 7000000.0);
  EXPECT_EQ(r.routes[1].retained_per_request, 0.0);
  EXPECT_EQ(to_text(r),
            "POST /karyogram: requests=20, retained 6.19 MiB/request, live 124 MiB [growing]\n"
            "GET /ok: requests=10, retained 0 B/request, live 0 B [unknown]\n");
}

TEST(RouteReports, RoundTripThroughJsonAndMergeByRouteName) {
  const RouteReport r = two_routes();
  EXPECT_EQ(route_report_from_json(to_json(r)), r);
  EXPECT_THROW(route_report_from_json(R"({"routes": [{"route": "x"}]})"), std::invalid_argument);
  const RouteReport both = merge({r, r});
  ASSERT_EQ(both.routes.size(), 2u);
  EXPECT_EQ(both.routes[0].requests, 40u);
  EXPECT_EQ(both.routes[0].retained_per_request, 129761280.0 / 20);
  EXPECT_EQ(both.routes[0].verdict, "growing");
}

// 40 points a second apart. GET /leak keeps 1 MB a request for its 10 requests, then has no
// more; GET /cache fills 2 MB over its first 10 points and then only hits (3 requests a
// point, nothing allocated); the rest of the process allocates 1 MiB every interval.
History leak_then_cache() {
  History h;
  h.interval_s = 1;
  StackHistory leak{Traceback{kMalloc, user("app.cpp", 10), route_frame("GET /leak")}, {}, {}, {}, {}};
  StackHistory cache{Traceback{kMalloc, user("app.cpp", 20), route_frame("GET /cache")}, {}, {}, {}, {}};
  for (std::int64_t i = 0; i < 40; ++i) {
    HistoryPoint p;
    p.t_ms = 1000000 + 1000 * i;
    p.allocated = (i + 1) << 20;
    p.route_requests = {{"GET /leak", static_cast<std::uint64_t>(std::min<std::int64_t>(i, 10))},
                        {"GET /cache", static_cast<std::uint64_t>(3 * i)}};
    h.points.push_back(p);
    const std::int64_t kept = 1000000 * std::min<std::int64_t>(i, 10);
    for (auto* v : {&leak.sizes, &leak.allocated}) v->push_back(kept);
    for (auto* v : {&leak.counts, &leak.allocations}) v->push_back(std::min<std::int64_t>(i, 10));
    const std::int64_t cached = 200000 * std::min<std::int64_t>(i, 10);
    for (auto* v : {&cache.sizes, &cache.allocated}) v->push_back(cached);
    for (auto* v : {&cache.counts, &cache.allocations}) v->push_back(std::min<std::int64_t>(i, 10));
  }
  h.stacks = {leak, cache};
  return h;
}

TEST(RouteVerdicts, AreJudgedOnTheRoutesOwnRequestsNotTheProcesssWork) {
  const History h = leak_then_cache();
  // On the process's work the leak looks bounded: the program went on working while it held.
  HistoryIndex index(h, KeyType::route, false, {});
  const KeySeries* leak = index.find(Traceback{route_frame("GET /leak")});
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(classify(h, *leak).trend, Trend::plateaued);
  // On its own requests it rose with every one of them and none came since: growing.
  EXPECT_EQ(route_request_counts(h, "GET /leak").back(), 10);
  EXPECT_EQ(route_request_counts(h, "GET /other"), std::vector<std::int64_t>(40, 0));
  RouteReport r;
  r.routes = {{"GET /leak", 10, 10000000, 10, 10000000, 0, 0, 0, 0, "unknown"},
              {"GET /cache", 117, 2000000, 10, 2000000, 0, 0, 0, 0, "unknown"}};
  judge_on_history(r, h);
  ASSERT_EQ(r.routes.size(), 2u);
  EXPECT_EQ(r.routes[0].route, "GET /leak");
  EXPECT_EQ(r.routes[0].verdict, "growing");
  EXPECT_EQ(r.routes[1].verdict, "plateaued");  // its requests went on and it held
}

TEST(RouteVerdicts, WithoutABaselineARequestRetainsTheGrowthOverTheHistoryWindow) {
  History h = leak_then_cache();
  h.points.erase(h.points.begin(), h.points.begin() + 5);  // the window starts at the 5th request
  for (StackHistory& s : h.stacks)
    for (auto* v : {&s.sizes, &s.counts, &s.allocated, &s.allocations}) v->erase(v->begin(), v->begin() + 5);
  RouteReport r;
  r.routes = {{"GET /leak", 10, 10000000, 10, 10000000, 0, 0, 0, 0, "unknown"}};
  judge_on_history(r, h);
  EXPECT_EQ(r.routes[0].retained_bytes, 5000000);
  EXPECT_EQ(r.routes[0].retained_requests, 5u);
  EXPECT_EQ(r.routes[0].retained_per_request, 1000000.0);
  EXPECT_EQ(r.since_ms, 1005000);
  EXPECT_EQ(route_report_from_json(to_json(r)), r);
  EXPECT_NE(to_json(r).find(R"("since":"the history window")"), std::string::npos);
  // A baseline's figures stand: the window does not replace them.
  RouteReport since_baseline = two_routes();
  const RouteReport before = since_baseline;
  judge_on_history(since_baseline, h);
  EXPECT_EQ(since_baseline.routes[0].retained_bytes, before.routes[0].retained_bytes);
  EXPECT_EQ(since_baseline.since_ms, 0);
}

}  // namespace
}  // namespace liveheap
