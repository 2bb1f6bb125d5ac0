// The names of modes and keys, parsed strictly: an unknown name is an error, not a guess.
#include <iterator>
#include <stdexcept>
#include <string>

#include "liveheap/snapshot.hpp"

LIVEHEAP_NAMESPACE_BEGIN

std::string_view to_string(Mode mode) noexcept {
  switch (mode) {
    case Mode::off: return "off";
    case Mode::exact: return "exact";
    case Mode::sampled: return "sampled";
  }
  return "off";
}

Mode parse_mode(std::string_view text) {
  for (Mode m : {Mode::off, Mode::exact, Mode::sampled})
    if (to_string(m) == text) return m;
  throw std::invalid_argument("unknown mode '" + std::string(text) + "' (expected off, exact or sampled)");
}

std::string_view to_string(KeyType key) noexcept {
  switch (key) {
    case KeyType::file: return "file";
    case KeyType::line: return "line";
    case KeyType::function: return "function";
    case KeyType::traceback: return "traceback";
    case KeyType::route: return "route";
  }
  return "line";
}

KeyType parse_key_type(std::string_view text) {
  for (KeyType k : kKeyTypes)
    if (to_string(k) == text) return k;
  throw std::invalid_argument("unknown key '" + std::string(text) + "' (expected " + key_type_names() + ")");
}

std::string key_type_names(std::string_view last) {
  std::string names;
  const std::size_t n = std::size(kKeyTypes);
  for (std::size_t i = 0; i < n; ++i)
    names += std::string(i == 0 ? "" : i + 1 == n ? last : ", ") + std::string(to_string(kKeyTypes[i]));
  return names;
}

LIVEHEAP_NAMESPACE_END
