// The engine's and boot's functions that the layers above call: what the preload library
// (src/preload) shares with the full library it loads on first need. They have default
// visibility, so that the full library can bind to them in the other object; the preload
// library exports them (src/preload/preload.map), every other binary keeps them local
// (src/engine/own_code.map). None is on the hot path: such a call may go through the PLT.
#pragma once

#define LIVEHEAP_SHARED [[gnu::visibility("default")]]
