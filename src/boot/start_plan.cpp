// The preload library's start, decided (see start_plan.hpp). Every value is read with the
// parser and range the full library uses (liveheap/settings.hpp): a value read here is one
// the full library accepts too, and anything else goes to it.
#include "start_plan.hpp"

#include <cstring>
#include <initializer_list>
#include <string_view>

#include "liveheap/settings.hpp"
#include "start_environment.hpp"

namespace liveheap::boot {
namespace {

namespace settings = liveheap::settings;

// The value of `name`, parsed by `parse` into `*out`; true when unset (nothing to parse).
template <typename T, typename Parse>
bool read(const char* name, T* out, Parse parse) {
  const char* text = start_env(name);
  if (text == nullptr) return true;
  const auto value = parse(std::string_view(text));
  if (!value) return false;
  *out = static_cast<T>(*value);
  return true;
}

bool read_mode(engine::Mode* mode) {
  const char* text = start_env("LIVEHEAP_MODE");
  if (text == nullptr) return true;
  if (std::strcmp(text, "off") == 0) *mode = engine::Mode::off;
  else if (std::strcmp(text, "exact") == 0) *mode = engine::Mode::exact;
  else if (std::strcmp(text, "sampled") == 0) *mode = engine::Mode::sampled;
  else return false;
  return true;
}

bool any_set(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (start_env(name) != nullptr) return true;
  return false;
}

}  // namespace

StartPlan plan_start() noexcept {
  StartPlan plan;
  engine::Settings& e = plan.engine;
  e.mode = engine::Mode::sampled;  // the preload library's default: cheap enough to leave on
  std::uint64_t history = 0;
  const bool readable =
      !start_environment_overflowed() && read_mode(&e.mode) &&
      read("LIVEHEAP_FRAMES", &e.max_frames,
           [](std::string_view t) { return settings::detail::whole_number(t, settings::kFrames); }) &&
      read("LIVEHEAP_SAMPLE_INTERVAL", &e.sample_interval,
           [](std::string_view t) { return settings::detail::whole_number(t, settings::kSampleInterval); }) &&
      read("LIVEHEAP_MAX_TRACKER_MEMORY", &e.max_memory,
           [](std::string_view t) { return settings::detail::size_in_bytes(t, settings::kTrackerMemory); }) &&
      read("LIVEHEAP_HISTORY_INTERVAL", &history,
           [](std::string_view t) { return settings::detail::whole_number(t, settings::kHistoryInterval); });
  const char* addr = start_env("LIVEHEAP_ADDR");
  plan.endpoint = addr != nullptr;
  const bool early_endpoint = addr != nullptr && parse_early_address(addr, plan.address) &&
                              !any_set({"LIVEHEAP_TOKEN", "LIVEHEAP_ALLOWED_HOSTS", "LIVEHEAP_PREFIX",
                                        "LIVEHEAP_ALLOW_OPEN", "LIVEHEAP_METRICS_CALLSITES"});
  plan.full_library =
      !readable || start_env("LIVEHEAP_PLUMBING") != nullptr || (addr != nullptr && !early_endpoint);
  return plan;
}

}  // namespace liveheap::boot
