// A fresh directory of the test's own, removed with everything in it when the test ends:
// ctest -j runs tests side by side (and two build trees may run the same test at once), so
// no two tests may share a temporary name. Its name says which test made it.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace test_support {

class TempDir {
 public:
  // Under `parent` (GoogleTest's temporary directory unless given): "liveheap-", the test's
  // name (its first 24 characters: Unix socket paths made inside must stay under 108
  // bytes), the process id and mkdtemp's six characters.
  explicit TempDir(std::string parent = testing::TempDir()) {
    while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
    const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
    const std::string test_name = test ? std::string(test->name()).substr(0, 24) : "test";
    std::string name = parent + "/liveheap-" + test_name + "-" + std::to_string(::getpid()) + "-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr)
      throw std::runtime_error("cannot make a temporary directory like " + name);
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;  // a test that already removed it, or a file still being written
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // A path inside the directory.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace test_support
