// A request's route in the engine: names interned once, cut and cleaned, counted per
// request, a thread's own; an allocation inside a request interned as its stack with the
// route's frame outermost, the same stack id for every allocation of that site and route.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine.hpp"
#include "request_route.hpp"

namespace liveheap::engine {
namespace {

TEST(RequestRoutes, ANameIsInternedOnceCutAndCleanedAndItsRequestsCounted) {
  const RouteId a = intern_route("GET /engine/a", 13);
  EXPECT_EQ(intern_route("GET /engine/a", 13), a);
  EXPECT_NE(intern_route("GET /engine/b", 13), a);
  EXPECT_STREQ(route_name(a), "GET /engine/a");
  const std::uint64_t before = route_requests(a);
  const RouteId was = begin_request("GET /engine/a", 13);
  EXPECT_EQ(current_route(), a);
  EXPECT_EQ(route_requests(a), before + 1);
  RouteId elsewhere = a;
  std::thread([&] { elsewhere = current_route(); }).join();
  EXPECT_EQ(elsewhere, kNoRoute) << "the tag is the thread's own";
  set_route(was);

  const std::string long_name(300, 'x');
  EXPECT_EQ(std::strlen(route_name(intern_route(long_name.data(), long_name.size()))), kMaxRouteName);
  // A cut never splits a character: 126 bytes, then a 2-byte one that does not fit.
  const std::string cut = std::string(126, 'y') + "\xc3\xa9";
  EXPECT_EQ(std::string(route_name(intern_route(cut.data(), cut.size()))), std::string(126, 'y'));
  EXPECT_STREQ(route_name(intern_route("GET /caf\xe9\n", 10)), "GET /caf??");
  EXPECT_STREQ(route_name(intern_route("", 0)), "(unnamed)");
  EXPECT_STREQ(route_name(kOtherRoutes), "(other routes)");
  EXPECT_EQ(route_name(kNamedRoutes + 2), nullptr);
  set_route(kNamedRoutes + 2);  // no such id: ignored
  EXPECT_EQ(current_route(), was);
}

// A fake block address: never dereferenced.
void* block(int i) { return reinterpret_cast<void*>(std::uintptr_t{0x7e57} << 32 | std::uintptr_t(i) << 4); }
[[gnu::noinline]] void record(int i) { on_alloc(block(i), 1000); }
// As a hook records: from its caller's registers, so that the thread's kept walks are asked.
[[gnu::noinline]] void record_from_here(int i) { on_alloc(block(i), 1000, here()); }
// One block recorded from one call site, inside a request of `route` (kNoRoute: none),
// which goes on until the next: records of one route in a row may reuse what the thread
// knows of the stack.
[[gnu::noinline]] void record_in(RouteId route, int i, bool from_here = false) {
  set_route(route);
  if (from_here) record_from_here(i);
  else record(i);
}

struct Stack {
  std::vector<std::uintptr_t> frames;
  std::int64_t count = 0;
};

std::vector<Stack> live_stacks() {
  std::vector<Stack> out;
  visit_stacks(
      [](void* ctx, const std::uintptr_t* frames, std::uint32_t depth, const StackSums& s) {
        static_cast<std::vector<Stack>*>(ctx)->push_back({{frames, frames + depth}, s.count});
      },
      &out);
  return out;
}

// From one call site (a loop the compiler may not unroll), in and out of the request: the
// walk memo's ids and the kept walks' (asked when the engine is given the hook's registers)
// are routed ids, so each change of route must forget them.
void expect_routed_stacks(bool from_here) {
  ASSERT_TRUE(start(Settings{Mode::exact, 32, 524288, 0}));
  const RouteId route = intern_route("POST /engine/routed", 19);
  const RouteId in[] = {kNoRoute, kNoRoute, kNoRoute, route, route, route, kNoRoute, kNoRoute, route};
  int n = 9;
  asm volatile("" : "+r"(n));  // a count the compiler cannot see: the loop stays one call site
  for (int i = 0; i < n; ++i) record_in(in[i], i, from_here);
  set_route(kNoRoute);
  const std::vector<Stack> stacks = live_stacks();
  const Stack* routed = nullptr;
  for (const Stack& s : stacks)
    if (!s.frames.empty() && s.frames.back() == route_frame(route)) routed = &s;
  ASSERT_NE(routed, nullptr);
  EXPECT_EQ(routed->count, 4) << "every allocation of the request: one stack";
  const std::vector<std::uintptr_t> base(routed->frames.begin(), routed->frames.end() - 1);
  bool found = false;
  for (const Stack& s : stacks)
    if (s.frames == base) {
      found = true;
      EXPECT_EQ(s.count, 5);
    }
  EXPECT_TRUE(found) << "the same frames outside the request";
  for (int i = 0; i < n; ++i) on_free(block(i));
  stop();
}

TEST(RequestRoutes, AnAllocationInARequestKeepsItsStackWithTheRouteOutermost) {
  {
    SCOPED_TRACE("walked from the engine's own frame");
    expect_routed_stacks(false);
  }
  SCOPED_TRACE("walked from the hook's caller, as the hooks do");
  std::thread(expect_routed_stacks, true).join();  // a thread of its own: no walks kept before
}

}  // namespace
}  // namespace liveheap::engine
