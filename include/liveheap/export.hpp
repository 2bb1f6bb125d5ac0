// What the shared libraries export. liveheap is built with -fvisibility=hidden (and
// -fvisibility-inlines-hidden): only what the public headers declare between
// LIVEHEAP_API_BEGIN and LIVEHEAP_API_END (the public API) and the allocation hooks
// (src/engine/hook.cpp) are callable from outside, so the engine's, tracker's and server's
// internals stay free to change and cannot clash with the host program's symbols. Tests
// that reach the internals link the layers' objects instead (liveheap_internals).
#pragma once

#define LIVEHEAP_API_BEGIN _Pragma("GCC visibility push(default)")
#define LIVEHEAP_API_END _Pragma("GCC visibility pop")
