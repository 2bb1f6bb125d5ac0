// Stack capture for the hooks: libunwind's cached unw_backtrace (~0.2 us for 25 frames)
// when it can be loaded privately, libgcc's _Unwind_Backtrace (~2.5 us) otherwise.
#include "stack_capture.hpp"

#include <atomic>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unwind.h>

#include "thread_state.hpp"

extern "C" const ElfW(Ehdr) __ehdr_start;  // this shared object's ELF header (the linker's)

namespace liveheap::engine {
namespace {

using UnwBacktrace = int (*)(void** buffer, int size);
std::atomic<UnwBacktrace> g_unw_backtrace{nullptr};
std::uintptr_t g_own_begin = 0;  // this object's executable segment, set by find_own_code
std::uintptr_t g_own_end = 0;

// Our own executable segment, from our program headers: no dl_iterate_phdr, no malloc.
void find_own_code() noexcept {
  Dl_info info;
  if (dladdr(&__ehdr_start, &info) == 0) return;
  const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  const auto* ehdr = &__ehdr_start;
  const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(
      reinterpret_cast<const char*>(ehdr) + ehdr->e_phoff);
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    if (phdr[i].p_type == PT_LOAD && (phdr[i].p_flags & PF_X)) {
      g_own_begin = base + phdr[i].p_vaddr;
      g_own_end = g_own_begin + phdr[i].p_memsz;
    }
  }
}

struct UnwindState {
  std::uintptr_t* frames;
  std::uint32_t max;
  std::uint32_t count;
};

_Unwind_Reason_Code collect(struct _Unwind_Context* context, void* arg) {
  auto* state = static_cast<UnwindState*>(arg);
  if (state->count >= state->max) return _URC_END_OF_STACK;
  const std::uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  state->frames[state->count++] = ip;
  return _URC_NO_REASON;
}

}  // namespace

void load_unwinder() noexcept {
  if (g_unw_backtrace.load(std::memory_order_acquire) != nullptr) return;
  if (g_own_end == 0) find_own_code();
  HookGuard guard;  // dlopen allocates: none of it is a user's allocation
  if (void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    if (auto fn = reinterpret_cast<UnwBacktrace>(dlsym(lib, "unw_backtrace"))) {
      g_unw_backtrace.store(fn, std::memory_order_release);
      return;
    }
  }
}

bool is_own_code(std::uintptr_t address) noexcept {
  return address >= g_own_begin && address < g_own_end;
}

std::uint32_t capture_stack(std::uintptr_t* frames, std::uint32_t max) noexcept {
  // Written in place: our own frames (hook, engine, operator new) come first and are
  // skipped by moving the start, not by copying the stack.
  std::uint32_t want = max + kOwnFramesSlack;
  std::uint32_t n = 0;
  if (UnwBacktrace fn = g_unw_backtrace.load(std::memory_order_acquire)) {
    const int got = fn(reinterpret_cast<void**>(frames), static_cast<int>(want));
    n = got > 0 ? static_cast<std::uint32_t>(got) : 0;
  } else {
    UnwindState state{frames, want, 0};
    _Unwind_Backtrace(collect, &state);
    n = state.count;
  }
  std::uint32_t first = 0;
  while (first < n && is_own_code(frames[first])) ++first;
  if (n - first > max) n = first + max;
  if (first > 0) __builtin_memmove(frames, frames + first, (n - first) * sizeof(std::uintptr_t));
  return n - first;
}

}  // namespace liveheap::engine
