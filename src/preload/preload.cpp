// LD_PRELOAD entry point (libliveheap_preload.so: the hooks, the engine and boot, libc
// only): before main, starts tracking as the LIVEHEAP_* variables say (sampled by default:
// cheap enough to leave on) and, with LIVEHEAP_ADDR, the early endpoint
// (boot/early_endpoint.hpp). Nothing else is loaded unless a variable needs it: then the
// full library (boot/full_library.hpp) starts everything, as one library did before
// (full_start.cpp). A process that sets nothing pays for the hooks alone.
#include "early_endpoint.hpp"
#include "engine.hpp"
#include "full_library.hpp"
#include "start_environment.hpp"
#include "start_plan.hpp"

namespace {

namespace boot = liveheap::boot;
namespace engine = liveheap::engine;

[[gnu::constructor]] void liveheap_preload_init() {
  boot::capture_start_environment();
  const boot::StartPlan plan = boot::plan_start();
  // The settings were read with the full library's ranges: they are valid. Whatever else
  // could fail (another allocator preloaded first, no address space for the samples) is
  // the full start's to report, in its words.
  if (!plan.full_library &&
      (plan.engine.mode == engine::Mode::off || (engine::hooks_installed() && engine::start(plan.engine)))) {
    if (plan.endpoint) {
      boot::locate_full_library();  // its first connection may come after a chdir
      boot::start_early_endpoint(plan.address);
    }
    return;
  }
  if (void* start = boot::full_library_function("liveheap_preload_full_start"))
    reinterpret_cast<void (*)()>(start)();
}

}  // namespace
