// The route names a process has seen, their request counts, and the C API that tags a
// thread's requests (include/liveheap/liveheap.h).
#include "request_route.hpp"

#include <atomic>
#include <cstring>

#include "liveheap/liveheap.h"
#include "stack_capture.hpp"

namespace liveheap::engine {
namespace {

// A slot is claimed once (empty -> writing, by compare-exchange), written, then published
// (ready) and never changed again: readers need no lock, and a fork child never inherits one.
enum SlotState : std::uint32_t { kEmpty = 0, kWriting = 1, kReady = 2 };

struct RouteSlot {
  std::atomic<std::uint32_t> state{kEmpty};
  std::uint32_t hash = 0;
  std::uint32_t length = 0;
  char name[kMaxRouteName + 1] = {};
};

constinit RouteSlot g_routes[kNamedRoutes];
constinit std::atomic<std::uint64_t> g_requests[kOtherRoutes + 1] = {};

constexpr char kOtherRoutesName[] = "(other routes)";
constexpr char kUnnamed[] = "(unnamed)";

// Bytes of a UTF-8 sequence starting at s[0] (of `left` bytes), or 0 when it is none.
std::size_t utf8_sequence(const unsigned char* s, std::size_t left) noexcept {
  const unsigned char b = s[0];
  std::size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b >= 0xE0 && b <= 0xEF) n = 3, low = b == 0xE0 ? 0xA0 : 0x80, high = b == 0xED ? 0x9F : 0xBF;
  else if (b >= 0xF0 && b <= 0xF4) n = 4, low = b == 0xF0 ? 0x90 : 0x80, high = b == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (left < n || s[1] < low || s[1] > high) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

// `name` as kept: printable UTF-8, at most kMaxRouteName bytes; returns its length.
std::size_t clean_name(const char* name, std::size_t length, char* out) noexcept {
  const auto* in = reinterpret_cast<const unsigned char*>(name);
  std::size_t i = 0, o = 0;
  while (i < length) {
    const unsigned char b = in[i];
    std::size_t n = 1;
    if (b >= 0x80) n = utf8_sequence(in + i, length - i);
    if (o + (n == 0 ? 1 : n) > kMaxRouteName) break;
    if (n == 0 || b < 0x20 || b == 0x7F) {
      out[o++] = '?';
      ++i;
      continue;
    }
    std::memcpy(out + o, in + i, n);
    o += n;
    i += n;
  }
  out[o] = '\0';
  return o;
}

std::uint32_t name_hash(const char* name, std::size_t length) noexcept {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < length; ++i) h = (h ^ static_cast<unsigned char>(name[i])) * 16777619u;
  return h;
}

bool same_name(const RouteSlot& slot, std::uint32_t hash, const char* name, std::size_t length) noexcept {
  return slot.hash == hash && slot.length == length && std::memcmp(slot.name, name, length) == 0;
}

// Waits (briefly) for a slot another thread is writing; false when it stays unwritten (its
// writer vanished in a fork, or is descheduled for long): the caller moves on.
bool wait_ready(const RouteSlot& slot) noexcept {
  for (int spins = 0; spins < 4096; ++spins) {
    if (slot.state.load(std::memory_order_acquire) == kReady) return true;
    __builtin_ia32_pause();
  }
  return false;
}

// The walk memo's ids and the repeated walks' are routed ids (engine.cpp): a change of route
// empties them.
void enter_route(RouteId id) noexcept {
  if (t_thread.route == id) return;
  t_thread.route = id;
  forget_stack_ids();
}

}  // namespace

RouteId intern_route(const char* name, std::size_t length) noexcept {
  char clean[kMaxRouteName + 1];
  length = clean_name(name, length, clean);
  if (length == 0) length = clean_name(kUnnamed, sizeof kUnnamed - 1, clean);
  const std::uint32_t hash = name_hash(clean, length);
  for (std::uint32_t probe = 0; probe < kNamedRoutes; ++probe) {
    const std::uint32_t i = (hash + probe) % kNamedRoutes;
    RouteSlot& slot = g_routes[i];
    std::uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == kEmpty) {
      if (slot.state.compare_exchange_strong(state, kWriting, std::memory_order_acquire)) {
        std::memcpy(slot.name, clean, length + 1);
        slot.length = static_cast<std::uint32_t>(length);
        slot.hash = hash;
        slot.state.store(kReady, std::memory_order_release);
        return static_cast<RouteId>(i + 1);
      }
      // Another thread claimed it meanwhile (state now holds what it found).
    }
    if (state == kWriting && !wait_ready(slot)) continue;
    if (same_name(slot, hash, clean, length)) return static_cast<RouteId>(i + 1);
  }
  return kOtherRoutes;
}

RouteId begin_request(const char* name, std::size_t length) noexcept {
  const RouteId id = intern_route(name, length);
  g_requests[id].fetch_add(1, std::memory_order_relaxed);
  const RouteId was = t_thread.route;
  enter_route(id);
  return was;
}

RouteId current_route() noexcept { return t_thread.route; }

void set_route(RouteId id) noexcept {
  if (id == kNoRoute || route_name(id) != nullptr) enter_route(id);
}

const char* route_name(RouteId id) noexcept {
  if (id == kOtherRoutes) return kOtherRoutesName;
  if (id == kNoRoute || id > kNamedRoutes) return nullptr;
  const RouteSlot& slot = g_routes[id - 1];
  return slot.state.load(std::memory_order_acquire) == kReady ? slot.name : nullptr;
}

std::uint64_t route_requests(RouteId id) noexcept {
  return id <= kOtherRoutes ? g_requests[id].load(std::memory_order_relaxed) : 0;
}

}  // namespace liveheap::engine

// The C API: exported by every library the engine is in (the preload library too).
extern "C" {

[[gnu::visibility("default")]] void liveheap_request_begin(const char* route) {
  if (route == nullptr) return;
  // No more than a kept name can use: cut names stop reading there.
  liveheap::engine::begin_request(route, strnlen(route, liveheap::engine::kMaxRouteName + 4));
}

[[gnu::visibility("default")]] void liveheap_request_end(void) {
  liveheap::engine::set_route(liveheap::engine::kNoRoute);
}

}  // extern "C"
