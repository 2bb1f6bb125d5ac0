// The interned Python frames, and a cache from (code object, instruction) to them.
#include "python_frame_table.hpp"

#include <atomic>

#include "pages.hpp"
#include "spin_lock.hpp"

namespace liveheap::engine {
namespace {

// A frame's text: file and qualified name, NUL-terminated, cut to fit.
struct FrameEntry {
  std::uint64_t hash;
  std::uint32_t line;
  std::uint16_t file_length, name_length;
  char text[496];  // file, NUL, name, NUL
};
static_assert(sizeof(FrameEntry) == 512);
constexpr std::size_t kMaxFile = 367, kMaxName = 126;

constexpr std::uint32_t kEntriesPerChunk = 256;  // 128 KiB mapped at a time
constexpr std::uint32_t kChunks = 256;           // 65536 frames at most
std::atomic<FrameEntry*> g_chunks[kChunks];
std::atomic<std::uint32_t> g_next_entry{1};  // 0: no frame; written under g_insert_lock

// The index from a frame's text to its id: open addressing, half full at most. It starts
// at 4096 slots and doubles as frames come, up to 2^17: a hash spreads a few hundred
// frames over every page of an index, and one sized for the most frames (512 KiB) was
// resident in every Python process that sampled (a matplotlib figure loop: 0.4 MiB of its
// peak RSS). Lookups read it without a lock; inserts and its growth take g_insert_lock.
struct Index {
  std::uint32_t mask;  // slots - 1
  std::atomic<std::uint32_t> slots[];
};
constexpr std::uint32_t kFirstIndexSlots = 1u << 12;
constexpr std::uint32_t kMostIndexSlots = 1u << 17;
std::atomic<Index*> g_index{nullptr};
SpinLock g_insert_lock;

// The code cache: (code address, instruction) -> frame id, with what the id was computed
// from. A sequence count makes a read that overlaps a write miss instead of mixing them.
struct CacheEntry {
  std::atomic<std::uint32_t> sequence;  // odd while written
  std::uint32_t frame;
  std::uint64_t code;
  std::uint32_t index, prefix;
  std::uint64_t file_object, qualname_object, linetable_object;
  std::uint64_t fingerprint;
};
constexpr std::uint32_t kCacheSlots = 4096;
std::atomic<CacheEntry*> g_cache{nullptr};

template <typename T>
T* mapped_once(std::atomic<T*>& slot, std::size_t bytes) noexcept {
  if (T* p = slot.load(std::memory_order_acquire)) return p;
  auto* fresh = static_cast<T*>(map_pages(bytes));
  if (fresh == nullptr) return nullptr;
  T* expected = nullptr;
  if (slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
  unmap_pages(fresh, bytes);  // another thread mapped it first
  return expected;
}

FrameEntry* entry(std::uint32_t id) noexcept {
  if (id == 0 || id >= kChunks * kEntriesPerChunk) return nullptr;
  FrameEntry* chunk = g_chunks[id / kEntriesPerChunk].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : chunk + id % kEntriesPerChunk;
}

std::uint64_t text_hash(const char* file, std::size_t file_length, const char* name, std::size_t name_length,
                        std::uint32_t line) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull ^ line;
  for (std::size_t i = 0; i < file_length; ++i)
    h = (h ^ static_cast<unsigned char>(file[i])) * 0x100000001b3ull;
  h = (h ^ 0xFF) * 0x100000001b3ull;
  for (std::size_t i = 0; i < name_length; ++i)
    h = (h ^ static_cast<unsigned char>(name[i])) * 0x100000001b3ull;
  return h | 1;  // never 0
}

bool same_text(const FrameEntry& e, std::uint64_t hash, const char* file, std::size_t file_length,
               const char* name, std::size_t name_length, std::uint32_t line) noexcept {
  return e.hash == hash && e.line == line && e.file_length == file_length && e.name_length == name_length &&
         __builtin_memcmp(e.text, file, file_length) == 0 &&
         __builtin_memcmp(e.text + file_length + 1, name, name_length) == 0;
}

std::size_t index_bytes(std::uint32_t slots) noexcept {
  return sizeof(Index) + std::size_t{slots} * sizeof(std::atomic<std::uint32_t>);
}

// The id of (file, name, line) in `index`, 0 when it is not there.
std::uint32_t find(const Index& index, std::uint64_t hash, const char* file, std::size_t file_length,
                   const char* name, std::size_t name_length, std::uint32_t line) noexcept {
  for (std::uint32_t probe = 0; probe <= index.mask; ++probe) {
    const std::uint32_t id = index.slots[(hash + probe) & index.mask].load(std::memory_order_acquire);
    if (id == 0) return 0;
    const FrameEntry* e = entry(id);
    if (e != nullptr && same_text(*e, hash, file, file_length, name, name_length, line)) return id;
  }
  return 0;
}

void put(Index* index, std::uint32_t id, std::uint64_t hash) noexcept {
  std::uint32_t at = hash & index->mask;
  while (index->slots[at].load(std::memory_order_relaxed) != 0) at = (at + 1) & index->mask;
  index->slots[at].store(id, std::memory_order_release);
}

// Under g_insert_lock: an index twice as large (the first, when there is none) holding
// every frame, published; the old one's slots given back (a reader still probing it reads
// zeros: not found, so it takes the lock and finds the frame in the new one). nullptr when
// no memory could be mapped.
Index* grow_index(Index* old) noexcept {
  const std::uint32_t slots = old == nullptr ? kFirstIndexSlots : (old->mask + 1) * 2;
  auto* index = static_cast<Index*>(map_pages(index_bytes(slots)));
  if (index == nullptr) return nullptr;
  index->mask = slots - 1;
  const std::uint32_t next = g_next_entry.load(std::memory_order_relaxed);
  for (std::uint32_t id = 1; id < next; ++id)
    if (const FrameEntry* e = entry(id)) put(index, id, e->hash);
  g_index.store(index, std::memory_order_release);
  if (old != nullptr) {
    constexpr std::size_t kPage = 4096;
    const std::size_t bytes = index_bytes(old->mask + 1) / kPage * kPage;
    if (bytes > kPage) release_pages(reinterpret_cast<char*>(old) + kPage, bytes - kPage);
  }
  return index;
}

// The id of (file, name, line), a new entry on first sight; 0 when the table is full.
std::uint32_t intern_text(const char* file, std::size_t file_length, const char* name,
                          std::size_t name_length, std::uint32_t line) noexcept {
  const std::uint64_t hash = text_hash(file, file_length, name, name_length, line);
  if (const Index* index = g_index.load(std::memory_order_acquire))
    if (const std::uint32_t id = find(*index, hash, file, file_length, name, name_length, line)) return id;
  SpinGuard guard(g_insert_lock);
  Index* index = g_index.load(std::memory_order_relaxed);
  if (index != nullptr)
    if (const std::uint32_t id = find(*index, hash, file, file_length, name, name_length, line)) return id;
  // Every entry is in the index (both are written under the lock): with this one, there
  // will be g_next_entry of them.
  const std::uint32_t fresh = g_next_entry.load(std::memory_order_relaxed);
  if (index == nullptr || fresh > (index->mask + 1) / 2) {
    if (index != nullptr && index->mask + 1 >= kMostIndexSlots) return 0;  // full
    index = grow_index(index);
    if (index == nullptr) return 0;
  }
  if (fresh >= kChunks * kEntriesPerChunk) return 0;
  FrameEntry* chunk = mapped_once(g_chunks[fresh / kEntriesPerChunk], kEntriesPerChunk * sizeof(FrameEntry));
  if (chunk == nullptr) return 0;
  FrameEntry& e = chunk[fresh % kEntriesPerChunk];
  e.hash = hash;
  e.line = line;
  e.file_length = static_cast<std::uint16_t>(file_length);
  e.name_length = static_cast<std::uint16_t>(name_length);
  __builtin_memcpy(e.text, file, file_length);
  e.text[file_length] = '\0';
  __builtin_memcpy(e.text + file_length + 1, name, name_length);
  e.text[file_length + 1 + name_length] = '\0';
  g_next_entry.store(fresh + 1, std::memory_order_release);  // the entry before its id
  put(index, fresh, hash);
  return fresh;
}

std::uint32_t frame_of(const PythonCode& code, std::uint32_t index, std::uint32_t* prefix) noexcept {
  const std::int32_t line = line_of_instruction(code, index, prefix);
  if (line < 0) return 0;
  char file[kMaxFile + 1], name[kMaxName + 1];
  const std::size_t file_length = to_utf8(code.file, file, sizeof file);  // cut at a character
  const std::size_t name_length = to_utf8(code.qualname, name, sizeof name);
  return intern_text(file, file_length, name, name_length, static_cast<std::uint32_t>(line));
}

std::uint32_t cache_slot(std::uintptr_t code, std::uint32_t index) noexcept {
  return static_cast<std::uint32_t>(((code >> 4) ^ (std::uint64_t{index} * 0x9E3779B97F4A7C15ull)) *
                                        0xff51afd7ed558ccdull >>
                                    52);  // the top 12 bits
}
static_assert(kCacheSlots == 1u << 12);

}  // namespace

std::uintptr_t intern_python_frame(const PythonCode& code, std::uint32_t index) noexcept {
  if (index >= code.units) return 0;
  CacheEntry* cache = mapped_once(g_cache, kCacheSlots * sizeof(CacheEntry));
  CacheEntry* c = cache == nullptr ? nullptr : &cache[cache_slot(code.address, index)];
  if (c != nullptr) {
    const std::uint32_t before = c->sequence.load(std::memory_order_acquire);
    if ((before & 1) == 0 && c->code == code.address && c->index == index &&
        c->file_object == code.file_object && c->qualname_object == code.qualname_object &&
        c->linetable_object == code.linetable_object && c->prefix <= code.linetable_size) {
      const std::uint32_t frame = c->frame, prefix = c->prefix;
      const std::uint64_t fingerprint = c->fingerprint;
      std::atomic_thread_fence(std::memory_order_acquire);
      if (c->sequence.load(std::memory_order_relaxed) == before &&
          code_fingerprint(code, prefix) == fingerprint)
        return kPythonFrameBit | frame;
    }
  }
  std::uint32_t prefix = 0;
  const std::uint32_t frame = frame_of(code, index, &prefix);
  if (frame == 0) return 0;
  if (c != nullptr) {
    std::uint32_t sequence = c->sequence.load(std::memory_order_relaxed);
    if ((sequence & 1) == 0 &&
        c->sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire)) {
      std::atomic_thread_fence(std::memory_order_release);
      c->frame = frame;
      c->code = code.address;
      c->index = index;
      c->prefix = prefix;
      c->file_object = code.file_object;
      c->qualname_object = code.qualname_object;
      c->linetable_object = code.linetable_object;
      c->fingerprint = code_fingerprint(code, prefix);
      c->sequence.store(sequence + 2, std::memory_order_release);
    }
  }
  return kPythonFrameBit | frame;
}

bool python_frame_text(std::uintptr_t frame, PythonFrameText* out) noexcept {
  if (!is_python_frame(frame) || (frame & ~kPythonFrameBit) >= g_next_entry.load(std::memory_order_acquire))
    return false;
  const FrameEntry* e = entry(static_cast<std::uint32_t>(frame & ~kPythonFrameBit));
  if (e == nullptr || e->hash == 0) return false;
  out->file = e->text;
  out->function = e->text + e->file_length + 1;
  out->line = e->line;
  return true;
}

void python_frames_lock_for_fork() noexcept { g_insert_lock.lock(); }
void python_frames_unlock_after_fork() noexcept { g_insert_lock.unlock(); }
bool python_frames_locked() noexcept { return g_insert_lock.is_locked(); }

std::uint32_t python_frame_count() noexcept {
  const std::uint32_t next = g_next_entry.load(std::memory_order_relaxed);
  return next > kChunks * kEntriesPerChunk ? kChunks * kEntriesPerChunk - 1 : next - 1;
}

}  // namespace liveheap::engine
