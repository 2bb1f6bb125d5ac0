// The preload library's start, decided (see start_plan.hpp). Every value is read with the
// parser and range the full library uses (liveheap/settings.hpp): a value read here is one
// the full library accepts too, and anything else goes to it.
#include "start_plan.hpp"

#include <cstring>
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
  plan.full_library = !readable || start_env("LIVEHEAP_PLUMBING") != nullptr ||
                      start_env("LIVEHEAP_ADDR") != nullptr;
  return plan;
}

}  // namespace liveheap::boot
