// Which frames are allocation plumbing (the `line` key names the first frame that is not),
// and which are library frames (text tracebacks fold runs of them into one line).
#include "plumbing.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "glob.hpp"
#include "liveheap/format.hpp"

LIVEHEAP_NAMESPACE_BEGIN
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
      "malloc",   "calloc", "realloc", "reallocarray", "free",    "posix_memalign", "aligned_alloc",
      "memalign", "valloc", "pvalloc", "strdup",       "strndup", "__libc_malloc"};
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

// The user's own plumbing (set_plumbing), swapped whole so readers never see half a list.
// constinit: the preload library sets it from a constructor that may run before any
// dynamic initializer of this file.
constinit std::atomic<std::shared_ptr<const std::vector<Filter>>> g_user_plumbing;

bool is_user_plumbing(const Frame& frame) noexcept {
  const std::shared_ptr<const std::vector<Filter>> filters = g_user_plumbing.load();
  if (!filters) return false;
  for (const Filter& filter : *filters) {
    if (filter.matches(frame)) return true;
    // A function glob may name the function as shown, without parameters or return type.
    if (filter.field == Filter::Field::function) {
      try {
        if (report::glob_match(filter.pattern, short_function(frame.function))) return true;
      } catch (...) {  // out of memory: the frame counts as the user's
      }
    }
  }
  return false;
}

// The interpreter's own C code: libpython, an executable that links it in (Debian's
// python3.11, pyenv's static builds) and the standard library's extension modules. Its
// frames run Python code; the Python frames above them are where the user's code is.
bool is_interpreter_module(std::string_view module) {
  if (module.find("/lib-dynload/") != std::string_view::npos) return true;
  const std::string_view name = base_name(module);
  if (name.starts_with("libpython")) return true;
  if (!name.starts_with("python")) return false;
  for (const char c : name.substr(6))
    if (!(c >= '0' && c <= '9') && c != '.' && c != 'd') return false;
  return true;
}

bool in_system_headers(std::string_view file) {
  return file.starts_with("/usr/include/") || file.starts_with("/usr/local/include/");
}

bool in_system_library(std::string_view module) {
  return module.starts_with("/usr/lib") || module.starts_with("/lib");
}

// "boost/asio/detail/x.hpp" -> "boost::asio"; "c++/12/bits/x.h" -> "std"; else "".
std::string library_of_header(std::string_view file) {
  constexpr std::string_view kInclude = "/include/";
  const std::size_t at = file.find(kInclude);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = file.substr(at + kInclude.size());
  if (rest.starts_with("c++/")) return "std";
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  const std::string_view top = rest.substr(0, slash);
  const std::string_view below = rest.substr(slash + 1);
  const std::size_t next = below.find('/');
  if (top == "boost" && next != std::string_view::npos) return "boost::" + std::string(below.substr(0, next));
  return std::string(top);
}

// "boost::asio::detail::f" -> "boost::asio", "std::vector<…>::f" -> "std"; "" without "::".
std::string library_of_name(std::string_view name) {
  const std::size_t first = name.find("::");
  if (first == std::string_view::npos || first == 0) return {};
  const std::string_view top = name.substr(0, first);
  if (top == "boost") {
    const std::size_t second = name.find("::", first + 2);
    if (second != std::string_view::npos) return std::string(name.substr(0, second));
  }
  return std::string(top);
}

}  // namespace

void set_plumbing(const std::vector<std::string>& globs) {
  auto filters = std::make_shared<std::vector<Filter>>();
  for (const std::string& glob : globs) filters->push_back(Filter::parse(true, glob));
  if (filters->empty()) filters.reset();
  g_user_plumbing.store(std::move(filters));
}

bool is_plumbing(const Frame& frame) noexcept {
  if (is_route_frame(frame)) return true;  // no code: never a line's frame
  if (is_python_frame(frame)) return is_user_plumbing(frame);
  if (is_interpreter_module(frame.module)) return true;
  const std::string_view module = base_name(frame.module);
  if (module.starts_with("libliveheap") || module.starts_with("libc.so") ||
      module.starts_with("libstdc++.so"))
    return true;
  if (frame.file.starts_with("/usr/include/c++/")) return true;
  return is_allocator_function(frame.function) || in_plumbing_namespace(frame.function) ||
         is_user_plumbing(frame);
}

std::size_t user_frame_index(const Traceback& traceback) noexcept {
  for (std::size_t i = 0; i < traceback.size(); ++i)
    if (!is_plumbing(traceback[i])) return i;
  return 0;
}

LIVEHEAP_NAMESPACE_END

namespace liveheap::report {

// A request's route is shown where it is, never folded into a run of library frames.
bool is_library_frame(const Frame& frame) noexcept {
  if (is_route_frame(frame)) return false;
  return is_plumbing(frame) || in_system_headers(frame.file) ||
         (frame.file.empty() && in_system_library(frame.module));
}

bool is_library_source_frame(const Frame& frame) noexcept {
  if (is_route_frame(frame)) return false;
  return is_plumbing(frame) || in_system_headers(frame.file);
}

std::string library_name(const Frame& frame) {
  if (std::string name = library_of_header(frame.file); !name.empty()) return name;
  const std::string shown = short_function(frame.function);
  if (std::string name = library_of_name(shown); !name.empty()) return name;
  if (!frame.module.empty()) return std::string(base_name(frame.module));
  return shown.empty() ? "?" : shown;
}

}  // namespace liveheap::report
