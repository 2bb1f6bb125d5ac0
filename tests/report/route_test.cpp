// Reports by the route of the request that allocated (the stack's outermost frame), on
// hand-built snapshots: key=route, route= globs, pprof's label, and the /routes value.
#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/format.hpp"
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
  return snap({in_route("GET /figure", 10, 6000), in_route("GET /figure", 11, 100),
               in_route("POST /upload", 10, 500), {Traceback{kMalloc, user("app.cpp", 12)}, 7, 1}});
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

}  // namespace
}  // namespace liveheap
