// Whether some loaded object defines a symbol, read from the objects' own GNU hash tables
// rather than asked of dlsym: a dlsym that finds nothing allocates its error message, and
// in a program that never calls malloc that set up glibc's heap for liveheap alone (sampled
// mode's look for CPython: ~5 page faults in every exec of a /bin/true).
// Thread-safety: dl_iterate_phdr holds the loader's lock while it reads.
#pragma once

namespace liveheap::engine {

enum class Defined { no, yes, unknown };

// `yes` when an object's dynamic symbol table defines `name`, `no` when none does, `unknown`
// when an object has no GNU hash table to read (ask dlsym). Allocates nothing.
Defined defined_in_some_object(const char* name) noexcept;

}  // namespace liveheap::engine
