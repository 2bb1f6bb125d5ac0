// A small glob matcher of our own: fnmatch(3) semantics without its locale and flags.
#include "glob.hpp"

namespace liveheap::report {
namespace {

// Matches the set starting at pattern[i] ('[' already consumed) against c; sets `end` to
// the index after the closing ']'.
bool match_set(std::string_view pattern, std::size_t i, char c, std::size_t* end) noexcept {
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < pattern.size() && (pattern[i] != ']' || first)) {
    first = false;
    char lo = pattern[i];
    if (lo == '\\' && i + 1 < pattern.size()) lo = pattern[++i];
    char hi = lo;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      hi = pattern[i + 2];
      if (hi == '\\' && i + 3 < pattern.size()) hi = pattern[++i + 2];
      i += 2;
    }
    if (lo <= c && c <= hi) matched = true;
    ++i;
  }
  *end = i + 1;  // past ']'
  return matched != negate;
}

}  // namespace

std::string glob_error(std::string_view pattern) {
  if (pattern.empty()) return "empty pattern";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      if (i + 1 == pattern.size()) return "pattern ends with a lone backslash";
      ++i;
    } else if (pattern[i] == '[') {
      std::size_t j = i + 1;
      if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;  // "[]...]": ']' is a member
      while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
      if (j >= pattern.size()) return "unclosed '[' at position " + std::to_string(i);
      i = j;
    } else if (static_cast<unsigned char>(pattern[i]) < 0x20) {
      return "control character in pattern";
    }
  }
  return {};
}

bool glob_match(std::string_view pattern, std::string_view text) noexcept {
  // Iterative matching with one backtrack point for the last '*': linear for usual globs.
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star = ++p;
        star_text = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        std::size_t end = 0;
        if (match_set(pattern, p + 1, text[t], &end)) {
          p = end;
          ++t;
          continue;
        }
      } else {
        const char literal = (pc == '\\' && p + 1 < pattern.size()) ? pattern[p + 1] : pc;
        if (literal == text[t]) {
          p += pc == '\\' ? 2 : 1;
          ++t;
          continue;
        }
      }
    }
    if (star == std::string_view::npos) return false;
    p = star;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace liveheap::report
