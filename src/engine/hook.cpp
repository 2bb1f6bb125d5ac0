// The interposed allocation functions: malloc & co. and every operator new/delete.
// Each forwards to the allocator that follows liveheap in symbol order (next_allocator.hpp:
// glibc, jemalloc, tcmalloc, mimalloc); by mode, the engine records every block (exact) or
// one block per ~R bytes (sampled: hosted in glibc's heap, or served from the sample region).
// Runs before main and on every thread: no allocation and no locks here.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "engine.hpp"
#include "own_code.hpp"  // LIVEHEAP_OWN_CODE: every function here is on the way to the walk

namespace {

namespace engine = liveheap::engine;
using engine::g_next;
using engine::Mode;

#define LIVEHEAP_LIKELY(x) __builtin_expect(!!(x), 1)
#define LIVEHEAP_UNLIKELY(x) __builtin_expect(!!(x), 0)

constexpr std::size_t kPage = 4096;

// A hook, and the function operator new's fast path jumps to: each starts a 64-byte line,
// so that the fast paths of off and sampled mode (a test or two and a jump; malloc's both
// in 59 bytes) never span two lines, wherever the code before them moves. (malloc's, once
// it came to span two, cost 1 ns a pair more, its instructions unchanged.)
#define LIVEHEAP_HOOK LIVEHEAP_OWN_CODE [[gnu::aligned(64)]]

bool power_of_two(std::size_t alignment) noexcept {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

// What allocate() does past its fast paths: a sample drawn (`mode` sampled), or a block
// recorded (exact). Inlined into functions a hook jumps to, or into the hook itself: here()
// reads a frame whose caller is the hook's caller, and the walk starts there.
template <typename Next>
[[gnu::always_inline]] LIVEHEAP_OWN_CODE inline void* allocate_tracked(Mode mode, std::size_t size,
                                                                       std::size_t alignment, bool zero,
                                                                       Next next) noexcept {
  if (mode == Mode::sampled) {
    if (alignment == 0 || power_of_two(alignment))
      if (void* p = engine::sample_allocate(size, alignment, zero, engine::here())) return p;
    return next();
  }
  // Kept in the frame across the call (volatile): in a callee-saved register it cost a
  // push and a pop more per allocation.
  void* volatile p = next();
  engine::on_alloc(p, size, engine::here());
  return p;
}

// A sample, out of line: then the hooks' fast paths (off, and sampled short of the sample
// point) are tail calls that set up no frame; only exact mode's path needs one, and GCC
// places it there (with this path inline too, GCC placed one prologue for all of them, ahead
// of the mode's test). A hook jumps here: the walk from here() takes one step to the hook's
// caller, as from the hook itself.
template <typename Next>
[[gnu::noinline]] LIVEHEAP_OWN_CODE void* allocate_sampled(std::size_t size, std::size_t alignment, bool zero,
                                                           Next next) noexcept {
  return allocate_tracked(Mode::sampled, size, alignment, zero, next);
}

// Whether this allocation takes the allocator's block as it is: tracking is off, or sampled
// and short of the sample point (which it moves on by `size`).
[[gnu::always_inline]] inline bool untracked(Mode mode, std::size_t size) noexcept {
  if (LIVEHEAP_LIKELY(mode == Mode::off)) return true;
  // Sampled is production's mode (and the default): its test laid out next.
  return LIVEHEAP_LIKELY(engine::is_sampled(mode)) && LIVEHEAP_LIKELY(!engine::sample_point_crossed(size));
}

// One allocation through the current mode; `next` makes the block the usual way (a lambda
// that captures by value: the fast paths keep nothing on the hook's stack). `alignment` is
// what a sample needs (0: malloc's); a block whose alignment the region cannot give as the
// allocator would (not a power of two) is never sampled. Only calloc needs a sample's
// reused pages `zero`ed. `exact`, when given, makes and records the block in exact mode
// whole (malloc's: the engine's malloc_exact()); else next() and on_alloc() here.
template <typename Next, typename Exact = std::nullptr_t>
[[gnu::always_inline]] LIVEHEAP_OWN_CODE inline void* allocate(std::size_t size, std::size_t alignment,
                                                               Next next, bool zero = false,
                                                               Exact exact = nullptr) noexcept {
  const Mode mode = engine::mode();
  if (untracked(mode, size)) return next();
  if (engine::is_sampled(mode)) return allocate_sampled(size, alignment, zero, next);
  if constexpr (std::is_null_pointer_v<Exact>)
    return allocate_tracked(Mode::exact, size, alignment, zero, next);
  else return exact();
}

// realloc of a sampled block. Within its usable size (what the allocator underneath would
// have given it, what the program was told) it stays sampled with the weight of its draw;
// past it, it is a new block drawn through the mode like any other, the bytes copied over.
// An unsampled block is treated alike (realloc_maybe_sampled), so the draw a block keeps
// never depends on whether it was sampled: the estimate stays unbiased (sampler.hpp).
LIVEHEAP_OWN_CODE void* realloc_sampled(void* p, std::size_t size) noexcept {
  if (size == 0) {  // glibc's realloc(p, 0): frees p, returns null
    engine::sample_free(p);
    return nullptr;
  }
  if (size <= engine::sample_live_header(p)->usable)  // else (no room left in the region) moved out
    if (void* q = engine::sample_resize(p, size, engine::here())) return q;
  void* q;
  if (engine::mode() == Mode::sampled) {
    // Drawn a sample again, it grows where it is when its run can, else moves within the
    // region (sample_regrow); not drawn, it moves to the allocator underneath.
    if (engine::sample_point_crossed(size))
      if (void* r = engine::sample_regrow(p, size, engine::here())) return r;
    // Hosted, glibc's realloc grows it (a large chunk with mremap: no second copy resident).
    if (!engine::in_sample_region(p)) return engine::sample_unsample(p, size);
    q = g_next.malloc(size);
  } else {
    q = allocate(size, 0, [size] { return g_next.malloc(size); });
  }
  if (q == nullptr) return nullptr;
  // All the program was told it may use: it may have written past its request.
  const std::size_t old_size = engine::sample_live_header(p)->usable;
  std::memcpy(q, p, old_size < size ? old_size : size);
  // Its run goes back at once: a block that grew out of it (a list or buffer doubling
  // as it fills) will not shrink back to it, and kept, each step of the growth stayed
  // resident (a 1.5M-element Python list held tens of MiB more than without liveheap).
  engine::sample_free(p, false);
  return q;
}

// realloc of the allocator's block in sampled mode: it moves to a sampled block when sampled
// (only when the allocator can say how many bytes to copy). Within its usable size it keeps
// its draw, unsampled, as a sampled block keeps its own (realloc_sampled).
LIVEHEAP_OWN_CODE void* realloc_maybe_sampled(void* p, std::size_t size) noexcept {
  if (LIVEHEAP_LIKELY(!engine::sample_point_crossed(size))) return g_next.realloc(p, size);
  const std::size_t old_size =
      size == 0 || g_next.malloc_usable_size == nullptr ? size : g_next.malloc_usable_size(p);
  if (size <= old_size) {
    engine::skip_sample_point(size);  // else the next allocation would be sampled for sure
    return g_next.realloc(p, size);
  }
  void* q = engine::sample_allocate(size, 0, false, engine::here());
  if (q == nullptr) return g_next.realloc(p, size);
  std::memcpy(q, p, old_size < size ? old_size : size);
  g_next.free(p);
  return q;
}

// free() of a block that may be a sample (may_be_sampled: one in 128 of glibc's others, and
// page-aligned ones, pass too), off the fast path. In exact mode, one that is none is
// forgotten first; while the mode changes (set_free_filter), it just goes on.
[[gnu::noinline]] void free_maybe_sampled(void* p) noexcept {
  if (engine::is_sample(p)) return engine::sample_free(p);
  if (engine::mode() == Mode::exact) engine::on_free(p);
  g_next.free(p);
}

// realloc in exact mode: the old block is forgotten before the allocator can reuse its
// address.
LIVEHEAP_OWN_CODE void* realloc_exact(void* p, std::size_t size) noexcept {
  const engine::Forgotten old = engine::forget(p);
  void* q = g_next.realloc(p, size);
  if (q == nullptr) {
    if (size != 0) engine::restore(p, old);  // p is still allocated and unchanged
    return nullptr;
  }
  engine::on_alloc(q, size, engine::here());  // a new trace at the realloc's own stack, as tracemalloc
  return q;
}

// An operator new the allocator had no block for: the same form of the C++ runtime's own
// operator new (the next definition after liveheap's: libstdc++'s, or libc++'s) tries
// again and runs the new_handler loop, then throws that runtime's std::bad_alloc, or
// returns null for a nothrow form. liveheap throws nothing itself: the engine has no
// exceptions, and the preload library no C++ runtime of its own.
enum NewForm : unsigned {
  kPlain,
  kArray,
  kPlainNothrow,
  kArrayNothrow,
  kAligned,
  kAlignedArray,
  kAlignedNothrow,
  kAlignedArrayNothrow,
  kNewForms
};
constexpr const char* kNewNames[kNewForms] = {"_Znwm",
                                              "_Znam",
                                              "_ZnwmRKSt9nothrow_t",
                                              "_ZnamRKSt9nothrow_t",
                                              "_ZnwmSt11align_val_t",
                                              "_ZnamSt11align_val_t",
                                              "_ZnwmSt11align_val_tRKSt9nothrow_t",
                                              "_ZnamSt11align_val_tRKSt9nothrow_t"};
std::atomic<void*> g_runtime_new[kNewForms];

// The runtime's operator new of `form`, looked up on the first failure; nullptr when no
// object after liveheap defines it.
[[gnu::noinline, gnu::cold]] void* runtime_new(NewForm form) noexcept {
  void* f = g_runtime_new[form].load(std::memory_order_acquire);
  if (f == nullptr) {
    f = dlsym(RTLD_NEXT, kNewNames[form]);
    g_runtime_new[form].store(f, std::memory_order_release);
  }
  return f;
}

[[noreturn]] void no_runtime() noexcept {
  constexpr char kMessage[] = "liveheap: operator new failed and no C++ runtime can throw\n";
  const ssize_t ignored = write(2, kMessage, sizeof kMessage - 1);
  (void)ignored;
  abort();
}

// The forms without a nothrow_t: the runtime's throws, or returns a block.
[[gnu::noinline, gnu::cold]] void* new_failed(NewForm form, std::size_t size, std::size_t alignment) {
  void* f = runtime_new(form);
  if (f == nullptr) no_runtime();
  if (alignment == 0) return reinterpret_cast<void* (*)(std::size_t)>(f)(size);
  return reinterpret_cast<void* (*)(std::size_t, std::align_val_t)>(f)(
      size, static_cast<std::align_val_t>(alignment));
}

// The nothrow forms: the runtime's returns null when it has no block either.
[[gnu::noinline, gnu::cold]] void* nothrow_new_failed(NewForm form, std::size_t size,
                                                      std::size_t alignment) noexcept {
  void* f = runtime_new(form);
  if (f == nullptr) return nullptr;
  // A tag of our own: std::nothrow is an object of the C++ runtime's.
  static constexpr std::nothrow_t nothrow{};
  if (alignment == 0)
    return reinterpret_cast<void* (*)(std::size_t, const std::nothrow_t&) noexcept>(f)(size, nothrow);
  return reinterpret_cast<void* (*)(std::size_t, std::align_val_t, const std::nothrow_t&) noexcept>(f)(
      size, static_cast<std::align_val_t>(alignment), nothrow);
}

constexpr bool is_nothrow(NewForm form) {
  return form == kPlainNothrow || form == kArrayNothrow || form == kAlignedNothrow ||
         form == kAlignedArrayNothrow;
}

// What operator new of `Form` returns for the allocator's block `p`: p, or what the C++
// runtime's does when there is none (a throw, or null).
template <NewForm Form>
[[gnu::always_inline]] inline void* new_result(void* p, std::size_t size,
                                               std::size_t alignment) noexcept(is_nothrow(Form)) {
  if (LIVEHEAP_LIKELY(p != nullptr)) return p;
  if constexpr (is_nothrow(Form)) return nothrow_new_failed(Form, size, alignment);
  else return new_failed(Form, size, alignment);
}

// An operator new that is tracked (exact mode, or a sample point crossed), its failure's
// handling included, out of line: the hook jumps here, so that its fast paths keep no frame
// but the one word that outlives their call (the size, for a failure).
template <NewForm Form, Mode M>
[[gnu::noinline]] LIVEHEAP_OWN_CODE void* new_tracked(std::size_t size,
                                                      std::size_t alignment) noexcept(is_nothrow(Form)) {
  void* const p = alignment == 0 ? allocate_tracked(M, size, 0, false, [size] { return g_next.malloc(size); })
                                 : allocate_tracked(M, size, alignment, false, [alignment, size] {
                                     return g_next.memalign(alignment, size);
                                   });
  return new_result<Form>(p, size, alignment);
}

// An operator new that is not tracked, out of line: the hook jumps here, or to
// new_tracked(), and sets up no frame of its own.
template <NewForm Form>
[[gnu::noinline]] LIVEHEAP_HOOK void* new_untracked(std::size_t size,
                                                    std::size_t alignment) noexcept(is_nothrow(Form)) {
  return new_result<Form>(alignment == 0 ? g_next.malloc(size) : g_next.memalign(alignment, size), size,
                          alignment);
}

// What operator new of an unaligned `Form` returns when the allocator had no block (the
// engine's new_exact() calls it last).
template <NewForm Form>
[[gnu::cold]] void* new_of_no_block(std::size_t size) noexcept(is_nothrow(Form)) {
  return new_result<Form>(nullptr, size, 0);
}

template <NewForm Form>
LIVEHEAP_OWN_CODE inline void* new_impl(std::size_t size, std::size_t alignment) noexcept(is_nothrow(Form)) {
  const Mode mode = engine::mode();
  if (LIVEHEAP_LIKELY(untracked(mode, size))) return new_untracked<Form>(size, alignment);
  if (engine::is_sampled(mode)) return new_tracked<Form, Mode::sampled>(size, alignment);
  if (alignment == 0) return engine::new_exact(size, new_of_no_block<Form>);
  return new_tracked<Form, Mode::exact>(size, alignment);
}

}  // namespace

// The hooks replace malloc and operator new for the whole process: exported whatever
// -fvisibility a build uses.
#pragma GCC visibility push(default)

extern "C" {

LIVEHEAP_HOOK void* malloc(std::size_t size) {
  return allocate(
      size, 0, [size] { return g_next.malloc(size); }, false, [size] { return engine::malloc_exact(size); });
}

LIVEHEAP_HOOK void free(void* p) {
  // Off and sampled, only a block that may be a sample passes; exact, every block.
  if (LIVEHEAP_LIKELY(!engine::free_needs_engine(p))) return g_next.free(p);
  if (p == nullptr) return;  // passes the address test; a no-op for every allocator
  if (engine::mode() == Mode::exact && LIVEHEAP_LIKELY(!engine::may_be_sampled(p))) {
    // Forgotten before the allocator has it: once freed its address may go to another
    // thread.
    return engine::on_free_then_free(p);
  }
  free_maybe_sampled(p);
}

LIVEHEAP_HOOK void* calloc(std::size_t n, std::size_t size) {
  std::size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  // Sampled blocks come from pages the kernel zeroed (fresh, or dropped on release).
  return allocate(
      bytes, 0, [n, size] { return g_next.calloc(n, size); }, true);
}

LIVEHEAP_HOOK void* realloc(void* p, std::size_t size) {
  if (LIVEHEAP_UNLIKELY(engine::may_be_sampled(p) && engine::is_sample(p))) return realloc_sampled(p, size);
  const Mode mode = engine::mode();
  if (LIVEHEAP_LIKELY(mode == Mode::off)) return g_next.realloc(p, size);
  if (p == nullptr) return malloc(size);
  if (mode == Mode::sampled) return realloc_maybe_sampled(p, size);
  return realloc_exact(p, size);
}

LIVEHEAP_HOOK void* reallocarray(void* p, std::size_t n, std::size_t size) {
  std::size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}

LIVEHEAP_HOOK int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (!power_of_two(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
  int error = 0;
  void* p = allocate(size, alignment, [&]() -> void* {
    void* q = nullptr;
    error = g_next.posix_memalign(&q, alignment, size);
    return error == 0 ? q : nullptr;
  });
  if (p == nullptr) return error != 0 ? error : ENOMEM;
  *out = p;
  return 0;
}

// What the allocator accepts (glibc 2.36 takes any alignment and rounds it up; jemalloc
// refuses a non-power of two) is its own call: such alignments are never sampled.
LIVEHEAP_HOOK void* aligned_alloc(std::size_t alignment, std::size_t size) {
  return allocate(size, alignment < 16 ? 16 : alignment,
                  [alignment, size] { return g_next.aligned_alloc(alignment, size); });
}

LIVEHEAP_HOOK void* memalign(std::size_t alignment, std::size_t size) {
  return allocate(size, alignment < 16 ? 16 : alignment,
                  [alignment, size] { return g_next.memalign(alignment, size); });
}

LIVEHEAP_HOOK void* valloc(std::size_t size) {
  return allocate(size, kPage, [size] { return g_next.valloc(size); });
}

LIVEHEAP_HOOK void* pvalloc(std::size_t size) {
  return allocate(size, kPage, [size] { return g_next.pvalloc(size); });
}

LIVEHEAP_HOOK std::size_t malloc_usable_size(void* p) {
  if (p == nullptr) return 0;
  if (engine::in_sample_region(p)) return engine::region_usable_size(p);
  if (engine::at_hosted_offset(p))
    if (const engine::SampleHeader* h = engine::hosted_header(p)) return h->usable;
  return g_next.malloc_usable_size == nullptr ? 0 : g_next.malloc_usable_size(p);
}

}  // extern "C"

LIVEHEAP_HOOK void* operator new(std::size_t size) { return new_impl<kPlain>(size, 0); }
LIVEHEAP_HOOK void* operator new[](std::size_t size) { return new_impl<kArray>(size, 0); }
LIVEHEAP_HOOK void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return new_impl<kPlainNothrow>(size, 0);
}
LIVEHEAP_HOOK void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return new_impl<kArrayNothrow>(size, 0);
}
LIVEHEAP_HOOK void* operator new(std::size_t size, std::align_val_t al) {
  return new_impl<kAligned>(size, static_cast<std::size_t>(al));
}
LIVEHEAP_HOOK void* operator new[](std::size_t size, std::align_val_t al) {
  return new_impl<kAlignedArray>(size, static_cast<std::size_t>(al));
}
LIVEHEAP_HOOK
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_impl<kAlignedNothrow>(size, static_cast<std::size_t>(al));
}
LIVEHEAP_HOOK
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_impl<kAlignedArrayNothrow>(size, static_cast<std::size_t>(al));
}

LIVEHEAP_HOOK void operator delete(void* p) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete[](void* p) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete(void* p, std::size_t) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete[](void* p, std::size_t) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete(void* p, std::align_val_t) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
LIVEHEAP_HOOK void operator delete(void* p, std::size_t, std::align_val_t) noexcept { free(p); }
LIVEHEAP_HOOK
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { free(p); }
LIVEHEAP_HOOK
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
LIVEHEAP_HOOK
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }

#pragma GCC visibility pop
