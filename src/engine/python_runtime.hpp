// The CPython interpreter running in this process, if any, and whether liveheap can read
// its frames: found with dlsym (never in a hook), its version checked against the layouts
// liveheap knows (python_layout.hpp). Published once complete; the hooks read it with one
// load.
// Thread-safety: find_python may run on any thread outside the hooks (concurrent calls
// return at once); python_runtime and python_status on any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "python_layout.hpp"
#include "shared.hpp"

namespace liveheap::engine {

struct PythonRuntime {
  const PythonLayout* layout = nullptr;
  std::uint32_t version = 0;  // Py_Version: 0x030B02F0 is 3.11.2 final
  // _PyEval_EvalFrameDefault: a return address in here is an evaluator frame, which runs
  // one chain of Python frames (the thread's frames up to the next entry frame).
  std::uintptr_t eval_begin = 0, eval_end = 0;
  // The thread's own state (its thread-specific storage), the GIL holder's, and whether the
  // interpreter is shutting down (when thread states of other threads get freed): three
  // leaf functions that read a variable each and never run Python code.
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  void* (*gil_holder)() = nullptr;         // _PyThreadState_UncheckedGet
  int (*finalizing)() = nullptr;           // _Py_IsFinalizing
  // The type objects a code object, its strings and its location table must point to.
  std::uintptr_t code_type = 0, str_type = 0, bytes_type = 0;
};

enum class PythonSupport : std::uint8_t {
  absent,       // no CPython in this process (yet)
  on,           // its frames are read
  unsupported,  // a version without a layout here
  incomplete,   // a symbol liveheap needs is missing (or in another object)
};

struct PythonStatus {
  PythonSupport support = PythonSupport::absent;
  std::uint32_t version = 0;      // Py_Version, 0 when it has none (before 3.11)
  const char* missing = nullptr;  // incomplete: the symbol
};

// Looks for the interpreter if it is not known yet (at engine start, and before a report:
// a program may load libpython late). Cheap when nothing was loaded since the last look.
LIVEHEAP_SHARED void find_python() noexcept;
LIVEHEAP_SHARED PythonStatus python_status() noexcept;

// The runtime whose frames are read, or nullptr: one load (inline: the allocation path
// asks on every walk its memo does not know).
[[gnu::visibility("hidden")]] extern std::atomic<const PythonRuntime*> g_python_runtime;
inline const PythonRuntime* python_runtime() noexcept {
  return g_python_runtime.load(std::memory_order_acquire);
}

// After a dlclose: the interpreter's code may be gone with it.
void forget_python_if_unloaded() noexcept;

}  // namespace liveheap::engine
