// A fixture with tracing on and a fresh admin server on 127.0.0.1 (a free port) per test,
// plus allocations made at known lines for the reports to find.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"

namespace http_test {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef LIVEHEAP_SANITIZED  // there the sanitizer is the malloc: tracing cannot start
    if (!is_tracing()) start();
#endif
    server_ = std::make_unique<AdminServer>(config(), "127.0.0.1", 0);
  }
  void TearDown() override { server_.reset(); }
  virtual Config config() const { return {}; }
  std::uint16_t port() const { return server_->port(); }

  std::unique_ptr<AdminServer> server_;
};

// Blocks allocated at one known line, freed on destruction.
struct KnownAllocations {
  KnownAllocations(int count, std::size_t size);  // see kKnownLine
  ~KnownAllocations();
  std::vector<void*> blocks;
};
extern const int kKnownLine;
inline constexpr const char* kKnownFile = "server_fixture.cpp";
inline constexpr const char* kKnownFunction = "allocate_at_known_line";

// A 64-byte block kept `depth` calls deep: each depth is a stack of its own.
void* keep_at_depth(int depth);

// The stat of `report` (JSON of /diff or /top) for kKnownFile:kKnownLine, or null.
nlohmann::json find_known(const nlohmann::json& report);

}  // namespace http_test
