// The public API's edges. What the public headers declare between LIVEHEAP_API_BEGIN and
// LIVEHEAP_API_END
//   - lives in the inline namespace liveheap::v1: users write liveheap::Snapshot, the
//     symbols say liveheap::v1::Snapshot, so a later, incompatible v2 can be built and linked
//     beside v1 and a program mixing headers and a library of different versions fails to
//     link instead of misbehaving. The version is named here only: liveheap's own sources
//     open the same namespace with LIVEHEAP_NAMESPACE_BEGIN/END (an unqualified definition
//     inside plain `namespace liveheap` would declare a second, unversioned function);
//   - has default visibility. liveheap is built with -fvisibility=hidden (and
//     -fvisibility-inlines-hidden): only the public API and the allocation hooks
//     (src/engine/hook.cpp) are callable from outside, so the engine's, tracker's and server's
//     internals stay free to change and cannot clash with the host program's symbols. Tests
//     that reach the internals link the layers' objects instead (liveheap_internals).
// liveheap's internal namespaces (liveheap::engine, ::report, ::symbolize, ::tracker, ...)
// are not versioned; liveheap::http and liveheap::settings are, being public.
#pragma once

#define LIVEHEAP_NAMESPACE_BEGIN \
  namespace liveheap {           \
  inline namespace v1 {
#define LIVEHEAP_NAMESPACE_END \
  }                            \
  }

#define LIVEHEAP_API_BEGIN _Pragma("GCC visibility push(default)") LIVEHEAP_NAMESPACE_BEGIN
#define LIVEHEAP_API_END LIVEHEAP_NAMESPACE_END _Pragma("GCC visibility pop")
