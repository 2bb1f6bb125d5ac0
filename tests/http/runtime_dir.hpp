// A private process registry for a test's preloaded programs, and their environment: each
// test's processes meet only each other, whatever else runs in parallel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace http_test {

// A fresh private XDG_RUNTIME_DIR (mkdtemp's mode 0700), removed at the end.
struct RuntimeDir {
  std::string group(std::uint16_t port) const { return path + "/liveheap/127.0.0.1-" + std::to_string(port); }
  test_support::TempDir dir;
  std::string path = dir.path();
};

// The preload library in exact mode on 127.0.0.1:port, registering under `dir`.
inline std::vector<std::string> preload_env(const RuntimeDir& dir, std::uint16_t port) {
  return {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
          "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact",
          "XDG_RUNTIME_DIR=" + dir.path};
}

}  // namespace http_test
