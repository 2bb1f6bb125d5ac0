// Which code was loaded at one moment, so that return addresses recorded then are named
// later only while their code is still there: after a dlclose another object may be mapped
// at their addresses, and naming them then would name that object's code.
// Thread-safety: an immutable value once made; now() may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace liveheap::symbolize {

// What the dynamic loader has done so far: objects loaded and unloaded since the start.
struct LoaderCounts {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
  bool operator==(const LoaderCounts&) const = default;
};
LoaderCounts loader_counts();

class LoadedCode {
 public:
  // Every object's loaded segments now, with the loader's counts, in one consistent pass
  // (the loader holds its lock through dl_iterate_phdr): a few dozen entries.
  static LoadedCode now();

  // What the loader had loaded and unloaded when the map was made: equal counts later
  // mean the same objects at the same places.
  const LoaderCounts& counts() const noexcept { return counts_; }

  // "" when the object holding `address` in this map holds it in `later` too, at the same
  // place (or neither map has code there); else the file of the object that changed,
  // this map's if it had one there, else `later`'s ("the main program" for the executable).
  std::string changed_object(std::uintptr_t address, const LoadedCode& later) const;

 private:
  struct Segment {
    std::uintptr_t end = 0;
    std::uintptr_t object_base = 0;  // dl_iterate_phdr's dlpi_addr
    std::string object_name;         // "" for the main program
    bool operator==(const Segment&) const = default;
  };
  using Segments = std::map<std::uintptr_t, Segment>;  // by start

  // The segment holding `address`, or nullptr; its start in *start.
  const Segment* holding(std::uintptr_t address, std::uintptr_t* start) const;

  LoaderCounts counts_;
  Segments segments_;
};

}  // namespace liveheap::symbolize
