// A plugin the symbolizer test loads, unloads and replaces by another build of itself: the
// same code at the same offsets (so the loader tends to map it at the same addresses), with
// another name and another line.
#if LIVEHEAP_PLUGIN_VARIANT == 1
extern "C" [[gnu::visibility("default"), gnu::noinline]] int plugin_alpha_entry(int x) {
  return x * 3 + 1;  // LIVEHEAP_PLUGIN_LINE
}
#else
// This build's function starts further down than the other's: a line of its own
// (symbolize_test.cpp pins both lines).
extern "C" [[gnu::visibility("default"), gnu::noinline]] int plugin_gamma_entry(int x) {
  return x * 3 + 1;  // LIVEHEAP_PLUGIN_LINE
}
#endif
