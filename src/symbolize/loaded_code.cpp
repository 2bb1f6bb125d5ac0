// The loaded code at one moment, and whether an address's code is still the same later.
#include "loaded_code.hpp"

#include <cstddef>
#include <link.h>

namespace liveheap::symbolize {

LoaderCounts loader_counts() {
  LoaderCounts counts;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        // The counters are there when the callback's size covers them (glibc >= 2.4).
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
          *static_cast<LoaderCounts*>(out) = {info->dlpi_adds, info->dlpi_subs};
        return 1;  // the same in every entry: one is enough
      },
      &counts);
  return counts;
}

LoadedCode LoadedCode::now() {
  LoadedCode code;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        auto* c = static_cast<LoadedCode*>(out);
        // The counters are there when the callback's size covers them (glibc >= 2.4).
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
          c->counts_ = {info->dlpi_adds, info->dlpi_subs};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          // Return addresses point into code: only executable segments can hold one.
          if (ph.p_type != PT_LOAD || ph.p_memsz == 0 || (ph.p_flags & PF_X) == 0) continue;
          const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          c->segments_[start] = {start + ph.p_memsz, info->dlpi_addr,
                                 info->dlpi_name == nullptr ? "" : info->dlpi_name};
        }
        return 0;
      },
      &code);
  return code;
}

const LoadedCode::Segment* LoadedCode::holding(std::uintptr_t address, std::uintptr_t* start) const {
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return nullptr;
  --it;
  if (address >= it->second.end) return nullptr;
  *start = it->first;
  return &it->second;
}

std::string LoadedCode::changed_object(std::uintptr_t address, const LoadedCode& later) const {
  // A return address points after its call: the call itself is the byte before.
  const std::uintptr_t pc = address - 1;
  std::uintptr_t then_start = 0, later_start = 0;
  const Segment* then = holding(pc, &then_start);
  const Segment* now = later.holding(pc, &later_start);
  if (then == nullptr && now == nullptr) return "";
  if (then != nullptr && now != nullptr && then_start == later_start && *then == *now) return "";
  const std::string& name = (then != nullptr ? then : now)->object_name;
  return name.empty() ? "the main program" : name;
}

}  // namespace liveheap::symbolize
