// Which frames are allocation plumbing: the `line` key names the first frame that is not.
#include <array>
#include <string_view>

#include "liveheap/snapshot.hpp"

namespace liveheap {
namespace {

bool starts_with_word(std::string_view text, std::string_view word) {
  // "malloc" matches "malloc" and "malloc(...)", not "malloc_wrapper_of_mine".
  if (!text.starts_with(word)) return false;
  if (text.size() == word.size()) return true;
  const char next = text[word.size()];
  return next == '(' || next == ' ' || next == '@' || next == '<';
}

bool is_allocator_function(std::string_view f) {
  static constexpr std::array<std::string_view, 13> kAllocators = {
      "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
      "memalign", "valloc", "pvalloc", "strdup", "strndup", "__libc_malloc"};
  for (std::string_view a : kAllocators)
    if (starts_with_word(f, a)) return true;
  return f.starts_with("operator new") || f.starts_with("operator delete");
}

bool in_plumbing_namespace(std::string_view f) {
  // Demangled names may start with a return type ("void* std::..."); look at the
  // qualified name, which starts after the last space before the first '('.
  const std::size_t paren = f.find('(');
  std::string_view head = f.substr(0, paren);
  // Template arguments can hold spaces: only skip a return type outside '<...>'.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '<') ++depth;
    else if (head[i] == '>') --depth;
    else if (head[i] == ' ' && depth == 0) start = i + 1;
  }
  const std::string_view name = head.substr(start);
  for (std::string_view ns : {"std::", "__gnu_cxx::", "__cxxabiv1::", "liveheap::"})
    if (name.starts_with(ns)) return true;
  return false;
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool is_plumbing(const Frame& frame) noexcept {
  const std::string_view module = base_name(frame.module);
  if (module.starts_with("libliveheap") || module.starts_with("libc.so") ||
      module.starts_with("libstdc++.so"))
    return true;
  if (frame.file.starts_with("/usr/include/c++/")) return true;
  return is_allocator_function(frame.function) || in_plumbing_namespace(frame.function);
}

std::size_t user_frame_index(const Traceback& traceback) noexcept {
  for (std::size_t i = 0; i < traceback.size(); ++i)
    if (!is_plumbing(traceback[i])) return i;
  return 0;
}

}  // namespace liveheap
