// libbacktrace reads the debug information of the objects dl_iterate_phdr reports, at the
// addresses it reports them loaded. liveheap-symbolizer reads files that other processes
// mapped, so this executable defines dl_iterate_phdr itself (exported, it comes before
// libc's in symbol lookup): while a PresentingOneObject lives on a thread, that thread's
// calls see one nameless object at bias 0, which libbacktrace takes to be the file its state
// was created for (a position-independent executable: a shared library or a PIE; a fixed-
// address executable is read at its own addresses anyway). Every other call, and every other
// thread's, goes to libc's.
// Thread-safety: the scope is per thread.
#pragma once

namespace liveheap::symbolize::server {

class PresentingOneObject {
 public:
  PresentingOneObject() noexcept;
  ~PresentingOneObject();
  PresentingOneObject(const PresentingOneObject&) = delete;
  PresentingOneObject& operator=(const PresentingOneObject&) = delete;
};

}  // namespace liveheap::symbolize::server
