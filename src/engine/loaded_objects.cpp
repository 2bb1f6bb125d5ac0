// Whether some loaded object defines a symbol: looked up in each object's GNU hash table,
// as the loader looks it up (the Bloom filter, the bucket, the chain of hashes, the name).
#include "loaded_objects.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace liveheap::engine {
namespace {

struct Query {
  const char* name;
  std::uint32_t hash;
  Defined answer;
};

std::uint32_t gnu_hash(const char* name) noexcept {
  std::uint32_t h = 5381;
  for (const char* c = name; *c != '\0'; ++c) h = h * 33 + static_cast<unsigned char>(*c);
  return h;
}

// Whether the object whose table is `table` (symbols `symbols`, names `names`) defines q.
bool defines(const std::uint32_t* table, const ElfW(Sym) * symbols, const char* names,
             const Query& q) noexcept {
  const std::uint32_t buckets_count = table[0], first_hashed = table[1], bloom_words = table[2],
                      shift = table[3];
  if (buckets_count == 0 || bloom_words == 0) return false;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(table + 4);
  constexpr std::uint32_t kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(q.hash / kBits) & (bloom_words - 1)];
  const ElfW(Addr) mask =
      (ElfW(Addr){1} << (q.hash % kBits)) | (ElfW(Addr){1} << ((q.hash >> shift) % kBits));
  if ((word & mask) != mask) return false;
  const auto* buckets = reinterpret_cast<const std::uint32_t*>(bloom + bloom_words);
  const std::uint32_t* chain = buckets + buckets_count;
  std::uint32_t i = buckets[q.hash % buckets_count];
  if (i < first_hashed) return false;
  for (;; ++i) {
    const std::uint32_t h = chain[i - first_hashed];
    if ((h | 1) == (q.hash | 1) && symbols[i].st_shndx != SHN_UNDEF &&
        std::strcmp(names + symbols[i].st_name, q.name) == 0)
      return true;
    if ((h & 1) != 0) return false;  // the chain's last
  }
}

int visit(dl_phdr_info* info, std::size_t, void* data) noexcept {
  auto* q = static_cast<Query*>(data);
  const ElfW(Dyn)* dynamic = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dynamic == nullptr) return 0;  // exports nothing
  ElfW(Addr) table = 0, symbols = 0, names = 0;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_GNU_HASH) table = d->d_un.d_ptr;
    else if (d->d_tag == DT_SYMTAB) symbols = d->d_un.d_ptr;
    else if (d->d_tag == DT_STRTAB) names = d->d_un.d_ptr;
  }
  if (table == 0 || symbols == 0 || names == 0) {
    q->answer = Defined::unknown;
    return 1;
  }
  // The loader relocates these entries in place, except in a read-only dynamic section
  // (the vDSO's), where they are still offsets from the object's base.
  const auto at = [info](ElfW(Addr) a) { return a < info->dlpi_addr ? a + info->dlpi_addr : a; };
  if (defines(reinterpret_cast<const std::uint32_t*>(at(table)),
              reinterpret_cast<const ElfW(Sym)*>(at(symbols)), reinterpret_cast<const char*>(at(names)),
              *q)) {
    q->answer = Defined::yes;
    return 1;
  }
  return 0;
}

}  // namespace

Defined defined_in_some_object(const char* name) noexcept {
  Query q{name, gnu_hash(name), Defined::no};
  dl_iterate_phdr(visit, &q);
  return q.answer;
}

}  // namespace liveheap::engine
