// The symbolizer against modules that come and go: an address is named after the code that
// is there now, not after what was there when it was first asked about; and the symbolizer
// process, which reads the debug information, restarted when it dies.
#include <gtest/gtest.h>

#include <backtrace.h>
#include <execinfo.h>
#include <signal.h>

#include <algorithm>
#include <boost/core/demangle.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <functional>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "main_program.hpp"
#include "symbolizer.hpp"
#include "wire.hpp"

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

// What liveheap named in the process itself before the symbolizer was a process of its own:
// one libbacktrace state over every loaded object, the inline chain at address - 1, the
// function by its dynamic symbol, else the symbol table's, else module+offset.
std::vector<liveheap::Frame> named_in_process(backtrace_state* state, std::uintptr_t address) {
  liveheap::Frame f;
  f.address = address;
  const std::uintptr_t pc = address - 1;
  Dl_info info{};
  f.module = liveheap::symbolize::object_file(reinterpret_cast<void*>(pc), info);
  std::vector<liveheap::Frame> frames;
  backtrace_pcinfo(
      state, pc,
      [](void* out, std::uintptr_t, const char* file, int line, const char* function) {
        if (file == nullptr && function == nullptr) return 0;
        liveheap::Frame frame;
        frame.function = function == nullptr ? "" : boost::core::demangle(function);
        frame.file = file == nullptr ? "" : file;
        frame.line = static_cast<unsigned>(line < 0 ? 0 : line);
        static_cast<std::vector<liveheap::Frame>*>(out)->push_back(frame);
        return 0;
      },
      [](void*, const char*, int) {}, &frames);
  for (liveheap::Frame& frame : frames) {
    frame.address = address;
    frame.module = f.module;
  }
  if (info.dli_fbase != nullptr && info.dli_sname != nullptr) {
    f.function = boost::core::demangle(info.dli_sname);
  } else {
    backtrace_syminfo(
        state, pc,
        [](void* out, std::uintptr_t, const char* symbol, std::uintptr_t, std::uintptr_t) {
          if (symbol != nullptr) *static_cast<std::string*>(out) = boost::core::demangle(symbol);
        },
        [](void*, const char*, int) {}, &f.function);
  }
  if (f.function.empty() && !frames.empty()) f.function = frames.back().function;
  if (f.function.empty()) {
    const std::uintptr_t offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    char text[32];
    std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(offset));
    f.function = f.module.substr(f.module.rfind('/') + 1) + text;
  }
  if (frames.empty()) return {f};
  frames.back().function = f.function;
  return frames;
}

[[gnu::noinline]] std::vector<std::uintptr_t> stack_here() {
  void* pcs[64];
  const int n = backtrace(pcs, 64);
  std::vector<std::uintptr_t> out;
  for (int i = 0; i < n; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(pcs[i]));
  return out;
}

// The names the symbolizer process gives are the ones the process would have read itself,
// frame for frame (function, file, line, module), over the test's own code, libstdc++'s
// templates inlined into it, libc and libstdc++ (their debug information when installed).
TEST(Symbolizer, NamesAreTheOnesTheProcessWouldHaveReadItself) {
  std::vector<std::uintptr_t> addresses;
  std::vector<int> values = {3, 1, 2};
  std::sort(values.begin(), values.end(), [&](int a, int b) {
    if (addresses.empty()) addresses = stack_here();
    return a < b;
  });
  const std::function<void()> through_function = [&] {
    for (std::uintptr_t a : stack_here()) addresses.push_back(a);
  };
  through_function();
  for (const void* code :
       {reinterpret_cast<const void*>(&qsort), reinterpret_cast<const void*>(&malloc),
        reinterpret_cast<const void*>(&snprintf), reinterpret_cast<const void*>(&stack_here),
        reinterpret_cast<const void*>(&named_in_process)})
    for (std::uintptr_t offset = 1; offset < 200; offset += 13)
      addresses.push_back(reinterpret_cast<std::uintptr_t>(code) + offset);
  ASSERT_GT(addresses.size(), 60u);

  backtrace_state* state = backtrace_create_state(
      nullptr, 0, [](void*, const char*, int) {}, nullptr);
  ASSERT_NE(state, nullptr);
  const auto named = liveheap::symbolize::symbolize(addresses);
  ASSERT_EQ(named.size(), addresses.size());
  int with_lines = 0;
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    const std::vector<liveheap::Frame> expected = named_in_process(state, addresses[i]);
    ASSERT_EQ(named[i].size(), expected.size())
        << "at " << std::hex << addresses[i] << " " << expected.back().function;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(named[i][k].function, expected[k].function) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].file, expected[k].file) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].line, expected[k].line) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].module, expected[k].module) << std::hex << addresses[i];
      EXPECT_EQ(named[i][k].address, expected[k].address);
    }
    with_lines += expected.front().line != 0;
  }
  EXPECT_GT(with_lines, 20) << "the comparison covered code with debug information";
}

// The symbolizer run by hand, as a child of this test, on a socket of its own.
class SymbolizerProcess : public ::testing::Test {
 protected:
  void start(std::vector<std::string> extra) {
    socket_ = "liveheap-symbolizer-test." + std::to_string(getpid());
    std::vector<std::string> args = {LIVEHEAP_SYMBOLIZER_EXECUTABLE, "--socket", socket_, "--idle-exit", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  }
  void TearDown() override {
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Asks the name of a function of this test (its debug information is megabytes); the
  // reply, or nullopt when nothing answered.
  std::optional<liveheap::symbolize::wire::Reply> ask() {
    for (int attempt = 0; attempt < 500; ++attempt) {
      const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      socklen_t length = 0;
      const sockaddr_un address = liveheap::symbolize::wire::abstract_address(socket_, length);
      if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
        close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      Dl_info info{};
      link_map* map = nullptr;
      dladdr1(reinterpret_cast<void*>(&stack_here), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP);
      liveheap::symbolize::wire::Request request;
      request.objects.push_back({liveheap::symbolize::main_program_path(), ""});
      request.queries.push_back({0, reinterpret_cast<std::uintptr_t>(&stack_here) + 4 - map->l_addr});
      std::optional<liveheap::symbolize::wire::Reply> reply;
      if (liveheap::symbolize::wire::write_message(fd, liveheap::symbolize::wire::encode(request)))
        if (auto body = liveheap::symbolize::wire::read_message(fd, 1 << 20))
          reply = liveheap::symbolize::wire::decode_reply(*body);
      close(fd);
      return reply;
    }
    return std::nullopt;
  }

  std::int64_t resident_bytes() {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("VmRSS:")) return std::stoll(line.substr(6)) * 1024;
    return -1;
  }

  bool exited_within(std::chrono::milliseconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string socket_;
  pid_t pid_ = 0;
};

TEST_F(SymbolizerProcess, AnswersThenExitsWhenIdle) {
  start({});
  const auto reply = ask();
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->answers.size(), 1u);
  ASSERT_FALSE(reply->answers[0].chain.empty());
  EXPECT_EQ(reply->answers[0].chain.back().function, "stack_here");
  EXPECT_EQ(reply->pid, pid_);
  EXPECT_EQ(reply->files, 1);
  EXPECT_TRUE(exited_within(std::chrono::seconds(5))) << "still running after its idle second";
}

// With --stay-with its parent (one that adopts orphans would get a SIGCHLD at its exit): it
// never exits while that parent lives; when idle it re-executes itself, the same process
// afresh, holding no file any more, and answers on the same socket.
TEST_F(SymbolizerProcess, StayingWithItsParentItStartsAfreshWhenIdleInsteadOfExiting) {
  start({"--stay-with", std::to_string(getpid())});
  const auto first = ask();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->files, 1);
  EXPECT_FALSE(exited_within(std::chrono::milliseconds(2500))) << "it exited: its parent would get a SIGCHLD";
  const std::int64_t idle = resident_bytes();
  EXPECT_LT(idle, first->rss_bytes - (2 << 20)) << "the debug information it read is still held: " << idle
                                                << " B now, " << first->rss_bytes << " B after reading";
  const auto again = ask();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->pid, pid_) << "the same process";
  ASSERT_EQ(again->answers.size(), 1u);
  ASSERT_FALSE(again->answers[0].chain.empty());
  EXPECT_EQ(again->answers[0].chain.back().function, "stack_here");
}

}  // namespace
