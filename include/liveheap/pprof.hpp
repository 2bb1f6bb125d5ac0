// Heap profiles in pprof's format (perftools.profiles.Profile, gzip'd), as Go's
// runtime/pprof writes them: what `go tool pprof`, Grafana Alloy and Parca read.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// One executable mapping of the process (/proc/self/maps), with its ELF build id.
struct Mapping {
  std::uint64_t start = 0;   // first address
  std::uint64_t limit = 0;   // one past the last
  std::uint64_t offset = 0;  // file offset of `start`
  std::string file;
  std::string build_id;  // hex, "" when the object has none
};

// Which of the four values a viewer shows first: /heap -> inuse_space, /allocs -> alloc_space.
enum class ProfileView { heap, allocs };

// The profile of `now` (from take_allocation_snapshot(): every stack that allocated since
// start-up): sample types alloc_objects/count, alloc_space/bytes, inuse_objects/count,
// inuse_space/bytes; period_type space/bytes, period = the sample interval (1 when exact).
// With `base`, a delta profile as Go's ?seconds=N: every value is now minus base, stacks
// whose four values did not change are left out, duration = now - base. Location ids are the
// return addresses and function ids hashes of name and file: the same between scrapes.
// Uncompressed protobuf bytes.
std::string pprof_profile(const Snapshot& now, const std::vector<Mapping>& mappings, ProfileView view,
                          const Snapshot* base = nullptr);

// gzip (RFC 1952) of `bytes`. Throws std::runtime_error if zlib fails.
std::string gzip(std::string_view bytes);

LIVEHEAP_API_END
