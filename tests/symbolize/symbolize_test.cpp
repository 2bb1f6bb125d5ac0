// The symbolizer against modules that come and go: an address is named after the code that
// is there now, not after what was there when it was first asked about; and the symbolizer
// process, which reads the debug information, restarted when it dies.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdint>
#include <dlfcn.h>
#include <string>

#include "symbolizer.hpp"

namespace {

struct Loaded {
  void* handle = nullptr;
  std::uintptr_t entry = 0;
};

Loaded load(const char* path, const char* symbol) {
  Loaded l;
  l.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (l.handle == nullptr) {
    ADD_FAILURE() << dlerror();
    return l;
  }
  l.entry = reinterpret_cast<std::uintptr_t>(dlsym(l.handle, symbol));
  EXPECT_NE(l.entry, 0u) << symbol << " in " << path;
  return l;
}

// What the symbolizer says of the code at `entry` (asked as a return address: entry + 1).
liveheap::Frame outermost(std::uintptr_t entry) {
  const std::uintptr_t address = entry + 1;
  auto frames = liveheap::symbolize::symbolize({&address, 1});
  if (frames.size() != 1 || frames[0].empty()) {
    ADD_FAILURE() << "no frames";
    return {};
  }
  return frames[0].back();
}

// One build of the plugin: its file, its function and the line of that function's body.
struct Plugin {
  const char* path;
  const char* function;
  unsigned line;
};
const Plugin kAlpha{LIVEHEAP_PLUGIN_A, "plugin_alpha_entry", 6};
const Plugin kGamma{LIVEHEAP_PLUGIN_B, "plugin_gamma_entry", 12};

// Loads `plugin`, checks what the symbolizer names at its entry, unloads it; its address.
std::uintptr_t load_and_name(const Plugin& plugin) {
  Loaded loaded = load(plugin.path, plugin.function);
  if (loaded.entry == 0) return 0;
  const liveheap::Frame f = outermost(loaded.entry);
  EXPECT_EQ(f.function, plugin.function);
  EXPECT_EQ(f.file.substr(f.file.rfind('/') + 1), "symbolize_plugin.cpp");
  EXPECT_EQ(f.line, plugin.line) << plugin.function;
  EXPECT_EQ(f.module, plugin.path);
  EXPECT_EQ(dlclose(loaded.handle), 0);
  return loaded.entry;
}

TEST(Symbolizer, AModuleLoadedWhereAnUnloadedOneWasGetsItsOwnNames) {
  int reused = 0;
  for (int round = 0; round < 3; ++round) {
    const std::uintptr_t alpha = load_and_name(kAlpha);
    const std::uintptr_t gamma = load_and_name(kGamma);
    ASSERT_NE(alpha, 0u);
    ASSERT_NE(gamma, 0u);
    reused += gamma == alpha;
  }
  // The case that matters happened at least once (the loader reuses the hole it made).
  EXPECT_GT(reused, 0) << "the second module never landed at the first one's address";
}

// The symbolizer reads each file once, by path and build-id: a module replaced at an address
// any number of times keeps its own lines (no budget of states to run out of).
TEST(Symbolizer, EveryModuleLoadedInTurnAtOneAddressHasItsOwnLines) {
  for (int round = 0; round < 12; ++round) {
    const Plugin& plugin = round % 2 == 1 ? kGamma : kAlpha;
    Loaded loaded = load(plugin.path, plugin.function);
    ASSERT_NE(loaded.entry, 0u);
    const liveheap::Frame f = outermost(loaded.entry);
    EXPECT_EQ(f.function, plugin.function) << "round " << round;
    EXPECT_EQ(f.module, plugin.path);
    EXPECT_EQ(f.line, plugin.line) << "round " << round;
    ASSERT_EQ(dlclose(loaded.handle), 0);
  }
  const liveheap::symbolize::Status status = liveheap::symbolize::status();
  EXPECT_EQ(status.problem, "");
  EXPECT_GT(status.pid, 0);
  EXPECT_NE(status.pid, getpid()) << "the debug information is read in a process of its own";
  EXPECT_GT(status.files, 0);
}

// A symbolizer killed between two reports is started again by the next one that needs it.
TEST(Symbolizer, AKilledSymbolizerIsStartedAgainByTheNextReport) {
  Loaded alpha = load(kAlpha.path, kAlpha.function);
  ASSERT_NE(alpha.entry, 0u);
  EXPECT_EQ(outermost(alpha.entry).line, kAlpha.line);
  const pid_t first = liveheap::symbolize::status().pid;
  ASSERT_GT(first, 0);
  ASSERT_EQ(kill(first, SIGKILL), 0);
  ASSERT_EQ(dlclose(alpha.handle), 0);  // its names leave the cache: the next ask goes out
  Loaded gamma = load(kGamma.path, kGamma.function);
  ASSERT_NE(gamma.entry, 0u);
  const liveheap::Frame f = outermost(gamma.entry);
  EXPECT_EQ(f.function, kGamma.function);
  EXPECT_EQ(f.line, kGamma.line);
  const liveheap::symbolize::Status status = liveheap::symbolize::status();
  EXPECT_EQ(status.problem, "");
  EXPECT_NE(status.pid, first);
  EXPECT_GT(status.pid, 0);
  ASSERT_EQ(dlclose(gamma.handle), 0);
}

}  // namespace
