// Code addresses to objects, biases and dynamic symbols (code_locations.hpp).
#include "code_locations.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <map>
#include <utility>

#include "build_id.hpp"
#include "main_program.hpp"

namespace liveheap::symbolize {
namespace {

// The loaded objects by (bias, loader's name): their build-ids, read once a call.
using BuildIds = std::map<std::pair<std::uintptr_t, std::string>, std::string>;

BuildIds loaded_build_ids() {
  BuildIds ids;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        static_cast<BuildIds*>(out)->emplace(
            std::make_pair(static_cast<std::uintptr_t>(info->dlpi_addr),
                           std::string(info->dlpi_name ? info->dlpi_name : "")),
            build_id_in_memory(*info));
        return 0;
      },
      &ids);
  return ids;
}

// The symbolizer runs elsewhere: a name the loader resolved against this process's working
// directory (dlopen("./x.so")) is made absolute.
std::string absolute(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

CodeLocations locate(std::span<const std::uintptr_t> addresses) {
  CodeLocations out;
  out.at.reserve(addresses.size());
  const BuildIds build_ids = loaded_build_ids();
  std::map<std::pair<std::uintptr_t, std::string>, std::uint32_t> object_index;
  for (std::uintptr_t address : addresses) {
    CodeLocation where;
    // A return address points after the call; the call itself is one byte before.
    const std::uintptr_t pc = address - 1;
    Dl_info info{};
    where.module = object_file(reinterpret_cast<void*>(pc), info);
    where.in_object = info.dli_fbase != nullptr;
    where.offset = where.in_object ? address - reinterpret_cast<std::uintptr_t>(info.dli_fbase) : address;
    if (info.dli_sname != nullptr) where.symbol = info.dli_sname;
    link_map* map = nullptr;
    if (where.in_object &&
        dladdr1(reinterpret_cast<void*>(pc), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 &&
        map != nullptr) {
      auto key = std::make_pair(static_cast<std::uintptr_t>(map->l_addr),
                                std::string(map->l_name ? map->l_name : ""));
      auto [it, added] = object_index.emplace(key, static_cast<std::uint32_t>(out.objects.size()));
      if (added) {
        const auto id = build_ids.find(key);
        out.objects.push_back({absolute(key.second.empty() ? main_program_path() : key.second),
                               id == build_ids.end() ? "" : id->second});
      }
      where.query = wire::Query{it->second, pc - map->l_addr};
    }
    out.at.push_back(std::move(where));
  }
  return out;
}

}  // namespace liveheap::symbolize
