// The public API: what the public headers declare between LIVEHEAP_API_BEGIN and
// LIVEHEAP_API_END has default visibility, whatever -fvisibility a build uses. The library
// itself is not yet built with -fvisibility=hidden: the white-box tests link the shared
// library and reach its internals, and the engine cannot be linked into a test program
// instead (it drops every frame of the object it lives in as its own).
#pragma once

#define LIVEHEAP_API_BEGIN _Pragma("GCC visibility push(default)")
#define LIVEHEAP_API_END _Pragma("GCC visibility pop")
