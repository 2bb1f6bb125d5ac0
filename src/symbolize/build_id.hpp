// An object's GNU build-id: what tells the symbolizer that the file it reads is the one a
// process mapped (a package upgrade replaces files under running programs).
// Thread-safety: pure functions.
#pragma once

#include <link.h>

#include <optional>
#include <string>

namespace liveheap::symbolize {

// The build-id of a loaded object, read from its notes in memory (no file access), in hex;
// "" when it has none.
std::string build_id_in_memory(const dl_phdr_info& object);

// The build-id of the ELF file at `path`, in hex ("" when it has none); nullopt when the
// file cannot be read or is not ELF.
std::optional<std::string> build_id_of_file(const std::string& path);

}  // namespace liveheap::symbolize
