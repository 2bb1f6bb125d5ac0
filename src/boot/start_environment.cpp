// The environment as the process started (see start_environment.hpp).
#include "start_environment.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace liveheap::boot {
namespace {

constexpr std::size_t kBytes = 16 * 1024;
constexpr std::size_t kMaxVariables = 64;

// "NAME=value" strings, each NUL-terminated, one after another.
char g_text[kBytes];
const char* g_variables[kMaxVariables];
std::size_t g_count = 0;
bool g_overflowed = false;
pthread_once_t g_captured = PTHREAD_ONCE_INIT;
std::atomic<bool> g_done{false};

bool wanted(const char* entry) noexcept {
  return std::strncmp(entry, "LIVEHEAP_", 9) == 0 || std::strncmp(entry, "XDG_RUNTIME_DIR=", 16) == 0;
}

void capture() noexcept {
  std::size_t used = 0;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!wanted(*entry)) continue;
    const std::size_t length = std::strlen(*entry) + 1;
    if (g_count == kMaxVariables || used + length > kBytes) {
      g_overflowed = true;
      continue;
    }
    std::memcpy(g_text + used, *entry, length);
    g_variables[g_count++] = g_text + used;
    used += length;
  }
  g_done.store(true, std::memory_order_release);
}

}  // namespace

void capture_start_environment() noexcept { pthread_once(&g_captured, capture); }

bool start_environment_captured() noexcept { return g_done.load(std::memory_order_acquire); }

const char* start_env(const char* name) noexcept {
  capture_start_environment();
  const std::size_t length = std::strlen(name);
  for (std::size_t i = 0; i < g_count; ++i)
    if (std::strncmp(g_variables[i], name, length) == 0 && g_variables[i][length] == '=')
      return g_variables[i] + length + 1;
  return nullptr;
}

bool start_environment_overflowed() noexcept {
  capture_start_environment();
  return g_overflowed;
}

void for_each_liveheap_variable(void (*fn)(void* ctx, const char* name, const char* value),
                                void* ctx) noexcept {
  capture_start_environment();
  char name[128];
  for (std::size_t i = 0; i < g_count; ++i) {
    const char* entry = g_variables[i];
    const char* equals = std::strchr(entry, '=');
    const std::size_t length = static_cast<std::size_t>(equals - entry);
    if (std::strncmp(entry, "LIVEHEAP_", 9) != 0 || length >= sizeof name) continue;
    std::memcpy(name, entry, length);
    name[length] = '\0';
    fn(ctx, name, equals + 1);
  }
}

}  // namespace liveheap::boot
