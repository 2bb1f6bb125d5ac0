// The process's executable mappings for pprof: /proc/self/maps for the ranges, the ELF
// GNU build-id note of each loaded object (found through dl_iterate_phdr) for their ids.
#include <elf.h>
#include <link.h>

#include <cstdio>
#include <sstream>

#include "file_lines.hpp"
#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

struct LoadedObject {
  std::uint64_t low = 0, high = 0;  // its PT_LOAD segments' span in memory
  std::string build_id;
};

// The hex build id in one PT_NOTE segment, or "".
std::string build_id_in(const char* note, std::size_t size) {
  std::size_t pos = 0;
  while (pos + sizeof(ElfW(Nhdr)) <= size) {
    const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(note + pos);
    const std::size_t name_at = pos + sizeof(ElfW(Nhdr));
    const std::size_t desc_at = name_at + ((n->n_namesz + 3) & ~3u);
    const std::size_t next = desc_at + ((n->n_descsz + 3) & ~3u);
    if (next > size) break;
    if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::string_view(note + name_at, 3) == "GNU") {
      std::string hex;
      char byte[3];
      for (std::size_t i = 0; i < n->n_descsz; ++i) {
        std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(note[desc_at + i]));
        hex += byte;
      }
      return hex;
    }
    pos = next;
  }
  return "";
}

int add_object(dl_phdr_info* info, std::size_t, void* ctx) {
  LoadedObject o{~std::uint64_t{0}, 0, ""};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uint64_t at = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      o.low = std::min<std::uint64_t>(o.low, at);
      o.high = std::max<std::uint64_t>(o.high, at + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE && o.build_id.empty()) {
      o.build_id = build_id_in(reinterpret_cast<const char*>(at), ph.p_memsz);
    }
  }
  static_cast<std::vector<LoadedObject>*>(ctx)->push_back(std::move(o));
  return 0;
}

}  // namespace

std::vector<Mapping> executable_mappings() {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(add_object, &objects);
  std::vector<Mapping> out;
  tracker::FileLines maps("/proc/self/maps");
  std::string line;
  while (maps.next(line)) {
    // "start-limit perms offset dev inode   path"
    std::istringstream in(line);
    std::string range, perms, dev, path;
    std::uint64_t offset = 0, inode = 0;
    in >> range >> perms >> std::hex >> offset >> dev >> std::dec >> inode;
    std::getline(in >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path.front() != '/') continue;
    Mapping m;
    std::sscanf(range.c_str(), "%lx-%lx", &m.start, &m.limit);
    m.offset = offset;
    m.file = path;
    for (const LoadedObject& o : objects)
      if (m.start >= o.low && m.start < o.high) m.build_id = o.build_id;
    out.push_back(std::move(m));
  }
  return out;
}

LIVEHEAP_NAMESPACE_END
