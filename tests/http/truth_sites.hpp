// The "SITE <file>:<line> <bytes> <count>" lines a truth program prints, and finding the
// report's row for one of them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace http_test {

struct Site {
  std::string file;
  int line = 0;
  long bytes = 0;
  long count = 0;
};

// Parses "SITE <file>:<line> <bytes> <count>".
Site parse_site(const std::string& text);

// The row of a JSON report's "stats" at the site's file and line, or null.
nlohmann::json find_site(const nlohmann::json& report, const Site& site);

}  // namespace http_test
