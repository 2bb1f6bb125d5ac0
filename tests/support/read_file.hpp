// A whole file as text, for tests that read what a program wrote or what /proc says of it.
// Header-only, as wait.hpp.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace test_support {

// The file's bytes, or "" when it cannot be read (a process that is gone).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace test_support
