// The main program's module named by its executable (see main_program.hpp).
#include "main_program.hpp"

#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstring>

#include "fork_safe_once.hpp"

namespace liveheap::symbolize {
namespace {

std::string read_exe() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  std::string exe(path, static_cast<std::size_t>(n));
  // An executable replaced on disk since it started (a package upgrade) is still this code.
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.ends_with(kDeleted)) exe.resize(exe.size() - kDeleted.size());
  return exe;
}

}  // namespace

namespace {
std::string* new_exe_path() { return new std::string(read_exe()); }
}  // namespace

const std::string& main_program_path() { return engine::fork_safe_once<std::string, new_exe_path>(); }

std::string object_file(const void* address, Dl_info& info) {
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) {
    info = Dl_info{};
    return "";
  }
  // The loader's own entry for the executable has no name; dladdr puts argv[0] there.
  if (map != nullptr && map->l_name != nullptr && map->l_name[0] == '\0' && !main_program_path().empty())
    return main_program_path();
  return info.dli_fname == nullptr ? "" : info.dli_fname;
}

std::string main_program_named(const char* name) {
  if (name == nullptr) return "";
  // The program headers are mapped with the executable's first segment.
  Dl_info info{};
  const void* in_main = reinterpret_cast<const void*>(::getauxval(AT_PHDR));
  if (in_main != nullptr && dladdr(in_main, &info) != 0 && info.dli_fname != nullptr &&
      std::strcmp(info.dli_fname, name) == 0 && !main_program_path().empty())
    return main_program_path();
  return name;
}

}  // namespace liveheap::symbolize
