// Build-ids from PT_NOTE segments, in memory and in files (build_id.hpp).
#include "build_id.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace liveheap::symbolize {
namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

// The NT_GNU_BUILD_ID note among the notes in [notes, notes + size), entries aligned to
// `align` (4, or 8 for segments aligned so); "" when there is none.
std::string build_id_in_notes(const unsigned char* notes, std::size_t size, std::size_t align) {
  const auto up = [align](std::size_t n) { return (n + align - 1) & ~(align - 1); };
  std::size_t at = 0;
  while (at + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) note;
    std::memcpy(&note, notes + at, sizeof note);
    const std::size_t name_at = at + sizeof note;
    const std::size_t desc_at = name_at + up(note.n_namesz);
    if (desc_at > size || note.n_descsz > size - desc_at) break;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(notes + name_at, "GNU", 4) == 0)
      return hex(notes + desc_at, note.n_descsz);
    at = desc_at + up(note.n_descsz);
  }
  return "";
}

std::size_t note_alignment(const ElfW(Phdr) & ph) { return ph.p_align == 8 ? 8 : 4; }

bool read_at(int fd, void* out, std::size_t n, off_t offset) {
  return ::pread(fd, out, n, offset) == static_cast<ssize_t>(n);
}

}  // namespace

std::string build_id_in_memory(const dl_phdr_info& object) {
  for (int i = 0; i < object.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = object.dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* notes = reinterpret_cast<const unsigned char*>(object.dlpi_addr + ph.p_vaddr);
    std::string id = build_id_in_notes(notes, ph.p_memsz, note_alignment(ph));
    if (!id.empty()) return id;
  }
  return "";
}

std::optional<std::string> build_id_of_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> id;
  ElfW(Ehdr) ehdr;
  if (read_at(fd, &ehdr, sizeof ehdr, 0) && std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) == 0 &&
      ehdr.e_ident[EI_CLASS] == (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) &&
      ehdr.e_phentsize == sizeof(ElfW(Phdr)) && ehdr.e_phnum < 4096) {
    std::vector<ElfW(Phdr)> phdrs(ehdr.e_phnum);
    if (read_at(fd, phdrs.data(), phdrs.size() * sizeof(ElfW(Phdr)), static_cast<off_t>(ehdr.e_phoff))) {
      id = "";
      for (const ElfW(Phdr) & ph : phdrs) {
        if (ph.p_type != PT_NOTE || ph.p_filesz > (1u << 20)) continue;
        std::vector<unsigned char> notes(ph.p_filesz);
        if (!read_at(fd, notes.data(), notes.size(), static_cast<off_t>(ph.p_offset))) continue;
        *id = build_id_in_notes(notes.data(), notes.size(), note_alignment(ph));
        if (!id->empty()) break;
      }
    }
  }
  ::close(fd);
  return id;
}

}  // namespace liveheap::symbolize
