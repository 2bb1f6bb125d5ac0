#include "truth_sites.hpp"

#include <sstream>

namespace http_test {

Site parse_site(const std::string& text) {
  std::istringstream in(text.substr(5));
  std::string where;
  Site site;
  in >> where >> site.bytes >> site.count;
  const auto colon = where.rfind(':');
  site.file = where.substr(0, colon);
  site.line = std::stoi(where.substr(colon + 1));
  return site;
}

namespace {
// The report may name the file as compiled, relative, or by its base name.
bool same_file(const std::string& reported, const std::string& truth) {
  const std::string base = truth.substr(truth.rfind('/') + 1);
  return reported == truth || reported.ends_with("/" + base) || reported == base;
}
}  // namespace

nlohmann::json find_site(const nlohmann::json& report, const Site& site) {
  for (const auto& stat : report["stats"])
    if (stat["line"] == site.line && same_file(stat["file"].get<std::string>(), site.file)) return stat;
  return nullptr;
}

}  // namespace http_test
