// The names of modes and keys, parsed strictly: an unknown name is an error, not a guess.
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
  throw std::invalid_argument("unknown mode '" + std::string(text) +
                              "' (expected off, exact or sampled)");
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
  for (KeyType k : {KeyType::line, KeyType::file, KeyType::function, KeyType::traceback, KeyType::route})
    if (to_string(k) == text) return k;
  throw std::invalid_argument("unknown key '" + std::string(text) +
                              "' (expected line, file, function, traceback or route)");
}

LIVEHEAP_NAMESPACE_END
