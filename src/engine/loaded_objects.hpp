// Questions about the loaded objects, answered without the costs of dladdr and dlsym:
// which object holds an address (dladdr reads the object's whole symbol table to say so,
// libc's 3,000 symbols or an interpreter's many more), and whether some object defines a
// symbol (a dlsym that finds nothing allocates its error message: in a program that never
// calls malloc, sampled mode's look for CPython set up glibc's heap for liveheap alone,
// ~5 page faults in every exec of a /bin/true).
// Thread-safety: _dl_find_object and dl_iterate_phdr are the loader's, safe from any thread.
#pragma once

#include <dlfcn.h>
#include <link.h>

namespace liveheap::engine {

// The loaded object that holds `address` (nullptr: none): _dl_find_object, a binary search.
inline const link_map* object_of(const void* address) noexcept {
  dl_find_object found;
  return _dl_find_object(const_cast<void*>(address), &found) == 0 ? found.dlfo_link_map : nullptr;
}

enum class Defined { no, yes, unknown };

// `yes` when an object's dynamic symbol table defines `name`, `no` when none does, `unknown`
// when an object has no GNU hash table to read (ask dlsym). Allocates nothing.
Defined defined_in_some_object(const char* name) noexcept;

}  // namespace liveheap::engine
