// Resolves the allocator that follows liveheap in symbol order, once, and checks that
// liveheap's own malloc is the one in effect.
#include "next_allocator.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sched.h>
#include <unistd.h>

#include "loaded_objects.hpp"
#include "stack_capture.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kPage = 4096;

// dlsym allocates while it reports a symbol it could not find (the dlerror string), and
// that allocation re-enters our malloc before there is anything to forward it to. Such
// blocks come from this arena (heaptrack's trick); they are never given back.
constexpr std::size_t kBootstrapBytes = 64 * 1024;
constexpr std::size_t kBootstrapHeader = 16;  // holds the block's size
alignas(64) char g_bootstrap[kBootstrapBytes];
std::size_t g_bootstrap_used = 0;  // written only by the resolving thread
[[gnu::tls_model("initial-exec")]] constinit thread_local bool t_resolving = false;

// 0: not resolved, 1: being resolved, 2: g_next holds the real table.
std::atomic<int> g_state{0};
NextAllocator g_real{};  // what was found; g_next may wrap it (bootstrap blocks)
bool g_real_is_glibc = false;

bool in_bootstrap(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const auto base = reinterpret_cast<std::uintptr_t>(g_bootstrap);
  return a - base < kBootstrapBytes;
}

std::size_t bootstrap_size(const void* p) noexcept {
  std::size_t size;
  __builtin_memcpy(&size, static_cast<const char*>(p) - kBootstrapHeader, sizeof size);
  return size;
}

void* bootstrap_allocate(std::size_t size, std::size_t alignment) noexcept {
  if (alignment < kBootstrapHeader) alignment = kBootstrapHeader;
  if ((alignment & (alignment - 1)) != 0 || alignment > kPage) return nullptr;
  std::size_t start = (g_bootstrap_used + kBootstrapHeader + alignment - 1) & ~(alignment - 1);
  if (size > kBootstrapBytes || start + size > kBootstrapBytes) return nullptr;
  g_bootstrap_used = start + size;
  __builtin_memcpy(g_bootstrap + start - kBootstrapHeader, &size, sizeof size);
  return g_bootstrap + start;  // static storage: already zero, as calloc needs
}

[[noreturn]] void die(const char* message) noexcept {
  const ssize_t ignored = write(2, message, std::strlen(message));
  (void)ignored;
  _exit(127);
}

// Whether `a` and `b` are addresses of one loaded object. _dl_find_object is a binary
// search; dladdr, the fallback, reads the object's whole symbol table (libc's ~3000
// symbols) for each address: 18 of them were 1.6 M instructions, most of the preload
// library's start-up cost in every process.
bool in_one_object(const void* a, const void* b) noexcept {
  const link_map* x = object_of(a);
  const link_map* y = object_of(b);
  if (x != nullptr && y != nullptr) return x == y;
  Dl_info p{}, q{};
  return dladdr(a, &p) != 0 && dladdr(b, &q) != 0 && p.dli_fbase == q.dli_fbase;
}

// The symbol `name` of the object that defines `in_object` (the next malloc), or nullptr
// when that object has none: another object's function must never see its blocks.
template <typename Fn>
Fn same_object(const char* name, const void* in_object) noexcept {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr || !in_one_object(f, in_object)) return nullptr;
  return reinterpret_cast<Fn>(f);
}

// Stand-ins for what the next allocator does not define, built on what it does.
void* memalign_by_posix(std::size_t alignment, std::size_t size) noexcept {
  void* p = nullptr;
  return g_real.posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}
int posix_by_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void*) != 0)
    return 22;  // EINVAL
  void* p = g_real.memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void* aligned_by_memalign(std::size_t alignment, std::size_t size) noexcept {
  return g_real.memalign(alignment, size);
}
void* valloc_by_memalign(std::size_t size) noexcept { return g_real.memalign(kPage, size); }
void* pvalloc_by_memalign(std::size_t size) noexcept {
  const std::size_t rounded = size == 0 ? kPage : (size + kPage - 1) & ~(kPage - 1);
  return rounded < size ? nullptr : g_real.memalign(kPage, rounded);
}

// Published instead of the real ones only when a bootstrap block exists.
void free_unless_bootstrap(void* p) noexcept {
  if (!in_bootstrap(p)) g_real.free(p);
}
void* realloc_from_bootstrap(void* p, std::size_t size) noexcept {
  if (!in_bootstrap(p)) return g_real.realloc(p, size);
  void* q = g_real.malloc(size);
  if (q != nullptr) {
    const std::size_t old = bootstrap_size(p);
    __builtin_memcpy(q, p, old < size ? old : size);
  }
  return q;
}
std::size_t usable_size_with_bootstrap(void* p) noexcept {
  if (in_bootstrap(p)) return bootstrap_size(p);
  return g_real.malloc_usable_size == nullptr ? 0 : g_real.malloc_usable_size(p);
}

void find_next() noexcept {
  NextAllocator r{};
  r.malloc = reinterpret_cast<decltype(r.malloc)>(dlsym(RTLD_NEXT, "malloc"));
  if (r.malloc == nullptr) die("liveheap: no malloc after liveheap in symbol order\n");
  const void* m = reinterpret_cast<const void*>(r.malloc);
  r.free = same_object<decltype(r.free)>("free", m);
  r.calloc = same_object<decltype(r.calloc)>("calloc", m);
  r.realloc = same_object<decltype(r.realloc)>("realloc", m);
  if (r.free == nullptr || r.calloc == nullptr || r.realloc == nullptr)
    die("liveheap: the allocator after liveheap lacks free, calloc or realloc\n");
  r.memalign = same_object<decltype(r.memalign)>("memalign", m);
  r.posix_memalign = same_object<decltype(r.posix_memalign)>("posix_memalign", m);
  r.aligned_alloc = same_object<decltype(r.aligned_alloc)>("aligned_alloc", m);
  r.valloc = same_object<decltype(r.valloc)>("valloc", m);
  r.pvalloc = same_object<decltype(r.pvalloc)>("pvalloc", m);
  r.malloc_usable_size = same_object<decltype(r.malloc_usable_size)>("malloc_usable_size", m);
  if (r.memalign == nullptr && r.posix_memalign == nullptr)
    die("liveheap: the allocator after liveheap has neither memalign nor posix_memalign\n");
  g_real = r;
  // glibc's malloc is in the object that defines gnu_get_libc_version (asked as
  // same_object() asks: dladdr here was 169 K instructions at every process's first malloc).
  g_real_is_glibc = in_one_object(m, reinterpret_cast<const void*>(gnu_get_libc_version));
  if (r.memalign == nullptr) g_real.memalign = memalign_by_posix;
  if (r.posix_memalign == nullptr) g_real.posix_memalign = posix_by_memalign;
  if (r.aligned_alloc == nullptr) g_real.aligned_alloc = aligned_by_memalign;
  if (r.valloc == nullptr) g_real.valloc = valloc_by_memalign;
  if (r.pvalloc == nullptr) g_real.pvalloc = pvalloc_by_memalign;
}

void publish() noexcept {
  NextAllocator next = g_real;
  if (g_bootstrap_used != 0) {
    next.free = free_unless_bootstrap;
    next.realloc = realloc_from_bootstrap;
    next.malloc_usable_size = usable_size_with_bootstrap;
  }
  // Entry by entry: a hook on another thread reads one entry, never the whole table.
  __atomic_store_n(&g_next.free, next.free, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.realloc, next.realloc, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.malloc_usable_size, next.malloc_usable_size, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.calloc, next.calloc, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.memalign, next.memalign, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.posix_memalign, next.posix_memalign, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.aligned_alloc, next.aligned_alloc, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.valloc, next.valloc, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.pvalloc, next.pvalloc, __ATOMIC_RELEASE);
  __atomic_store_n(&g_next.malloc, next.malloc, __ATOMIC_RELEASE);
}

// True once g_next may be used; false on the resolving thread while it resolves (the
// caller then serves the call from the bootstrap arena).
bool resolve() noexcept {
  if (t_resolving) return false;
  int expected = 0;
  if (g_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    t_resolving = true;
    find_next();
    t_resolving = false;
    publish();
    g_state.store(2, std::memory_order_release);
    return true;
  }
  while (g_state.load(std::memory_order_acquire) != 2) sched_yield();
  return true;
}

// g_next's first entries: each resolves the table, then makes its call through it.
void* first_malloc(std::size_t size) noexcept {
  return resolve() ? g_next.malloc(size) : bootstrap_allocate(size, 0);
}
void first_free(void* p) noexcept {
  if (resolve()) g_next.free(p);  // while resolving, only bootstrap blocks exist
}
void* first_calloc(std::size_t n, std::size_t size) noexcept {
  if (resolve()) return g_next.calloc(n, size);
  std::size_t bytes;
  return __builtin_mul_overflow(n, size, &bytes) ? nullptr : bootstrap_allocate(bytes, 0);
}
void* first_realloc(void* p, std::size_t size) noexcept {
  if (resolve()) return g_next.realloc(p, size);
  void* q = bootstrap_allocate(size, 0);
  if (q != nullptr && p != nullptr) {
    const std::size_t old = bootstrap_size(p);
    __builtin_memcpy(q, p, old < size ? old : size);
  }
  return q;
}
void* first_memalign(std::size_t alignment, std::size_t size) noexcept {
  return resolve() ? g_next.memalign(alignment, size) : bootstrap_allocate(size, alignment);
}
int first_posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (resolve()) return g_next.posix_memalign(out, alignment, size);
  void* p = bootstrap_allocate(size, alignment);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void* first_aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  return resolve() ? g_next.aligned_alloc(alignment, size) : bootstrap_allocate(size, alignment);
}
void* first_valloc(std::size_t size) noexcept {
  return resolve() ? g_next.valloc(size) : bootstrap_allocate(size, kPage);
}
void* first_pvalloc(std::size_t size) noexcept {
  return resolve() ? g_next.pvalloc(size) : bootstrap_allocate(size, kPage);
}
std::size_t first_usable_size(void* p) noexcept {
  if (!resolve()) return bootstrap_size(p);
  return g_next.malloc_usable_size == nullptr ? 0 : g_next.malloc_usable_size(p);
}

// Object names in load order (the order symbols are looked up in), for hooks_installed.
struct LoadOrder {
  static constexpr int kMax = 512;
  const char* names[kMax];
  int count = 0;
};

int collect_name(dl_phdr_info* info, std::size_t, void* data) noexcept {
  auto* order = static_cast<LoadOrder*>(data);
  if (order->count < LoadOrder::kMax) order->names[order->count++] = info->dlpi_name;
  return 0;
}

// Whether `f` is the start of a function that its object defines. A non-PIE executable's
// canonical PLT entry is also named by a symbol, but an undefined one (SHN_UNDEF with a value).
bool is_definition(void* f) noexcept {
  Dl_info info{};
  void* entry = nullptr;
  if (dladdr1(f, &info, &entry, RTLD_DL_SYMENT) == 0) return false;
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  return info.dli_saddr == f && symbol != nullptr && symbol->st_shndx != SHN_UNDEF;
}

// The first object in load order that itself defines malloc: is it liveheap?
bool first_definition_is_ours() noexcept {
  LoadOrder order;
  dl_iterate_phdr(collect_name, &order);
  for (int i = 1; i < order.count; ++i) {  // 0 is the executable: its malloc is a stub
    const char* name = order.names[i];
    if (name == nullptr || name[0] == '\0') continue;
    void* handle = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    void* f = dlsym(handle, "malloc");
    Dl_info info{};
    const bool defines = f != nullptr && is_definition(f) && dladdr(f, &info) != 0 &&
                         info.dli_fname != nullptr && std::strcmp(info.dli_fname, name) == 0;
    dlclose(handle);
    if (defines) return is_own_code(reinterpret_cast<std::uintptr_t>(f));
  }
  return false;
}

}  // namespace

NextAllocator g_next = {first_malloc,   first_free,           first_calloc,        first_realloc,
                        first_memalign, first_posix_memalign, first_aligned_alloc, first_valloc,
                        first_pvalloc,  first_usable_size};

const char* next_allocator_file() noexcept {
  resolve();
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(g_real.malloc), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

bool next_is_glibc() noexcept {
  resolve();
  return g_real_is_glibc;
}

bool hooks_installed() noexcept {
  void* resolved = dlsym(RTLD_DEFAULT, "malloc");
  if (resolved == nullptr) return false;
  if (is_own_code(reinterpret_cast<std::uintptr_t>(resolved))) return true;
  if (is_definition(resolved)) return false;  // another allocator comes first
  // A non-PIE executable's canonical PLT entry: its calls reach the first definition.
  return first_definition_is_ours();
}

}  // namespace liveheap::engine
