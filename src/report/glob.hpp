// fnmatch-style globs: * ? [set] [!set] [a-z] and backslash escapes, matched in full.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace liveheap::report {

// An empty string when `pattern` is well formed, else why not (for the error message).
std::string glob_error(std::string_view pattern);
// `pattern` must be well formed; '*' matches any run of characters, '/' included.
bool glob_match(std::string_view pattern, std::string_view text) noexcept;

}  // namespace liveheap::report
