// Finding CPython: its symbols, all in one object, and a version with a known layout.
#include "python_runtime.hpp"

#include <atomic>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include "loaded_objects.hpp"
#include "stack_capture.hpp"

namespace liveheap::engine {
namespace {

constinit PythonRuntime g_found;  // written once, before g_python_runtime publishes it
std::atomic<PythonSupport> g_support{PythonSupport::absent};
std::atomic<std::uint32_t> g_version{0};
std::atomic<const char*> g_missing{nullptr};
std::atomic<bool> g_looking{false};
std::atomic<bool> g_published{false};
// The loader's count of objects added at the last look that found nothing to read.
std::atomic<unsigned long long> g_adds_seen{~0ull};

unsigned long long loader_adds() noexcept {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // the first object carries the count
      },
      &adds);
  return adds;
}

// The address of `name` if it is defined in `object`, else 0.
std::uintptr_t symbol_in(const char* name, const link_map* object) noexcept {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr || object_of(p) != object) return 0;
  return reinterpret_cast<std::uintptr_t>(p);
}

void set_status(PythonSupport support, std::uint32_t version, const char* missing) noexcept {
  g_version.store(version, std::memory_order_relaxed);
  g_missing.store(missing, std::memory_order_relaxed);
  g_support.store(support, std::memory_order_release);
}

void look() noexcept {
  // Most processes have no CPython: found so without dlsym, whose failure allocates.
  if (defined_in_some_object("_PyEval_EvalFrameDefault") == Defined::no)
    return set_status(PythonSupport::absent, 0, nullptr);
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (eval == nullptr || dladdr1(eval, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) == 0 ||
      sym == nullptr)
    return set_status(PythonSupport::absent, 0, nullptr);
  const link_map* object = object_of(eval);
  if (object == nullptr) return set_status(PythonSupport::absent, 0, nullptr);
  const std::uintptr_t version_at = symbol_in("Py_Version", object);
  if (version_at == 0) return set_status(PythonSupport::unsupported, 0, nullptr);  // before 3.11
  const std::uint32_t version = *reinterpret_cast<const std::uint32_t*>(version_at);
  const PythonLayout* layout = (version >> 24) == 3 ? python_layout((version >> 16) & 0xFF) : nullptr;
  if (layout == nullptr) return set_status(PythonSupport::unsupported, version, nullptr);
  PythonRuntime r;
  r.layout = layout;
  r.version = version;
  r.eval_begin = reinterpret_cast<std::uintptr_t>(eval);
  r.eval_end = r.eval_begin + sym->st_size;
  static constexpr const char* kNames[] = {"PyGILState_GetThisThreadState",
                                           "_PyThreadState_UncheckedGet",
                                           "_Py_IsFinalizing",
                                           "PyCode_Type",
                                           "PyUnicode_Type",
                                           "PyBytes_Type"};
  std::uintptr_t at[6];
  for (int i = 0; i < 6; ++i)
    if ((at[i] = symbol_in(kNames[i], object)) == 0)
      return set_status(PythonSupport::incomplete, version, kNames[i]);
  if (sym->st_size == 0) return set_status(PythonSupport::incomplete, version, "_PyEval_EvalFrameDefault");
  r.this_thread_state = reinterpret_cast<void* (*)()>(at[0]);
  r.gil_holder = reinterpret_cast<void* (*)()>(at[1]);
  r.finalizing = reinterpret_cast<int (*)()>(at[2]);
  r.code_type = at[3];
  r.str_type = at[4];
  r.bytes_type = at[5];
  // A runtime once published stays where it is (a hook may be reading it): an interpreter
  // unloaded and another loaded is not read.
  if (g_published.exchange(true, std::memory_order_relaxed))
    return set_status(PythonSupport::absent, 0, nullptr);
  g_found = r;
  set_status(PythonSupport::on, version, nullptr);
  g_python_runtime.store(&g_found, std::memory_order_release);
  // The walks' memo of stack ids (never written while CPython is known, engine.cpp) may hold
  // ids memoized before: forgetting the frame rules empties every thread's.
  forget_frame_rules();
}

}  // namespace

void find_python() noexcept {
  if (g_support.load(std::memory_order_acquire) != PythonSupport::absent) return;
  if (g_looking.exchange(true, std::memory_order_acquire)) return;
  const unsigned long long adds = loader_adds();
  if (adds != g_adds_seen.load(std::memory_order_relaxed)) {
    look();
    g_adds_seen.store(adds, std::memory_order_relaxed);
  }
  g_looking.store(false, std::memory_order_release);
}

PythonStatus python_status() noexcept {
  const PythonSupport support = g_support.load(std::memory_order_acquire);
  return {support, g_version.load(std::memory_order_relaxed), g_missing.load(std::memory_order_relaxed)};
}

constinit std::atomic<const PythonRuntime*> g_python_runtime{nullptr};

void forget_python_if_unloaded() noexcept {
  const PythonRuntime* r = python_runtime();
  Dl_info info;
  if (r == nullptr || dladdr(reinterpret_cast<void*>(r->eval_begin), &info) != 0) return;
  g_python_runtime.store(nullptr, std::memory_order_release);
  g_adds_seen.store(~0ull, std::memory_order_relaxed);
  set_status(PythonSupport::absent, 0, nullptr);
}

}  // namespace liveheap::engine
