// pprof heap profiles from snapshots (liveheap/pprof.hpp): the sample, location, function
// and mapping tables of profile.proto, with ids that stay the same between scrapes.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "liveheap/pprof.hpp"
#include "pprof_wire.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// profile.proto's field numbers.
namespace profile_field {
constexpr unsigned kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
                   kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12,
                   kDefaultSampleType = 14;
}  // namespace profile_field

// alloc_objects, alloc_space, inuse_objects, inuse_space: Go's order.
using Values = std::array<std::int64_t, 4>;

struct Line {
  std::uint64_t function_id;
  std::int64_t line;
};

// What a profile holds, before encoding; samples keyed by their location ids, leaf first.
class ProfileBuilder {
 public:
  explicit ProfileBuilder(const std::vector<Mapping>& mappings) : mappings_(mappings) {
    std::sort(mappings_.begin(), mappings_.end(),
              [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
    string_id("");
  }

  // Adds `sign` times each trace's values.
  void add(const Snapshot& snapshot, std::int64_t sign) {
    for (const Trace& t : snapshot.traces()) {
      Values& v = samples_[{locations_of(t.traceback), route_label(t.traceback)}];
      v[0] += sign * t.alloc_count;
      v[1] += sign * t.alloc_size;
      v[2] += sign * t.count;
      v[3] += sign * t.size;
    }
  }

  std::string encode(const SnapshotInfo& info, ProfileView view, std::int64_t duration_ns) {
    report::ProtoWriter p;
    value_type(p, profile_field::kSampleType, "alloc_objects", "count");
    value_type(p, profile_field::kSampleType, "alloc_space", "bytes");
    value_type(p, profile_field::kSampleType, "inuse_objects", "count");
    value_type(p, profile_field::kSampleType, "inuse_space", "bytes");
    for (const auto& [key, values] : samples_) {
      if (values == Values{}) continue;
      report::ProtoWriter s;
      s.packed(1, key.first);
      s.packed(2, std::vector<std::int64_t>(values.begin(), values.end()));
      if (key.second != 0) {  // Label{key: "route", str: the route}
        report::ProtoWriter label;
        label.integer(1, static_cast<std::uint64_t>(string_id("route")));
        label.integer(2, static_cast<std::uint64_t>(key.second));
        s.bytes(3, label.data());
      }
      p.bytes(profile_field::kSample, s.data());
    }
    for (std::size_t i = 0; i < mappings_.size(); ++i) encode_mapping(p, i);
    for (const auto& [id, loc] : locations_) encode_location(p, id, loc);
    for (const auto& [id, fn] : functions_) {
      report::ProtoWriter f;
      f.integer(1, id);
      f.integer(2, static_cast<std::uint64_t>(fn.first));
      f.integer(3, static_cast<std::uint64_t>(fn.first));
      f.integer(4, static_cast<std::uint64_t>(fn.second));
      p.bytes(profile_field::kFunction, f.data());
    }
    p.integer(profile_field::kTimeNanos, static_cast<std::uint64_t>(info.taken_at_ms * 1'000'000));
    p.integer_opt(profile_field::kDurationNanos, static_cast<std::uint64_t>(duration_ns));
    value_type(p, profile_field::kPeriodType, "space", "bytes");
    p.integer(profile_field::kPeriod, info.mode == Mode::sampled ? info.sample_interval : 1);
    if (view == ProfileView::allocs)
      p.integer(profile_field::kDefaultSampleType, static_cast<std::uint64_t>(string_id("alloc_space")));
    // The string table last: every string above is in it by now.
    for (const std::string& s : strings_) p.bytes(profile_field::kStringTable, s);
    return p.take();
  }

 private:
  struct Location {
    std::uint64_t address;
    std::uint64_t mapping_id;
    std::vector<Line> lines;  // innermost first: inlined frames, then their caller
  };

  std::int64_t string_id(const std::string& s) {
    auto [it, added] = string_ids_.try_emplace(s, static_cast<std::int64_t>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }

  // FNV-1a of name and file: the same function has the same id in every profile.
  std::uint64_t function_id(const Frame& f) {
    std::string name = f.function.empty() ? f.module : f.function;
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : name + '\0' + f.file) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    h |= 1;  // never 0 (pprof's "no function")
    functions_.try_emplace(h, string_id(name), string_id(f.file));
    return h;
  }

  std::uint64_t mapping_id(std::uint64_t address) const {
    auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                               [](std::uint64_t a, const Mapping& m) { return a < m.start; });
    if (it == mappings_.begin()) return 0;
    --it;
    return address < it->limit ? static_cast<std::uint64_t>(it - mappings_.begin()) + 1 : 0;
  }

  // One location per return address; its frames are the run of frames with that address
  // (an inline chain), ended early where the chain's first frame comes again (recursion).
  // The plumbing frames above the user's frame are left out, as `key=line` skips them: the
  // leaf, which viewers count as flat, is the line that asked for the memory.
  // The request's route is no location: it is the sample's label `route` (route_label).
  std::vector<std::uint64_t> locations_of(const Traceback& tb) {
    std::vector<std::uint64_t> ids;
    const std::size_t user = user_frame_index(tb);
    const std::size_t size = !tb.empty() && is_route_frame(tb.back()) ? tb.size() - 1 : tb.size();
    for (std::size_t i = user; i < size;) {
      const std::uint64_t address = tb[i].address;
      std::size_t end = i + 1;
      while (end < size && tb[end].address == address && !(tb[end] == tb[i])) ++end;
      const std::uint64_t id = location_id(tb, i, user);
      if (!locations_.contains(id)) {
        Location loc{address, mapping_id(address), {}};
        for (std::size_t k = i; k < end; ++k)
          loc.lines.push_back({function_id(tb[k]), static_cast<std::int64_t>(tb[k].line)});
        locations_.emplace(id, std::move(loc));
      }
      ids.push_back(id);
      i = end;
    }
    return ids;
  }

  // The string id of the route of the request that allocated, 0 outside any request.
  std::int64_t route_label(const Traceback& tb) {
    if (tb.empty() || !is_route_frame(tb.back())) return 0;
    return string_id(tb.back().function);
  }

  // The return address; where plumbing was cut out of its inline chain, the address with
  // the number of frames cut in the top byte (above any user-space address), so a chain
  // cut short never shares an id with the whole chain. Never 0 (pprof's "no location").
  static std::uint64_t location_id(const Traceback& tb, std::size_t first, std::size_t user) {
    const std::uint64_t address = tb[first].address;
    std::uint64_t cut = 0;
    if (first == user)
      while (cut < first && tb[first - cut - 1].address == address) ++cut;
    const std::uint64_t id = address | (std::min<std::uint64_t>(cut, 0xff) << 56);
    return id != 0 ? id : 1;
  }

  void value_type(report::ProtoWriter& p, unsigned field_number, const std::string& type,
                  const std::string& unit) {
    report::ProtoWriter v;
    v.integer(1, static_cast<std::uint64_t>(string_id(type)));
    v.integer(2, static_cast<std::uint64_t>(string_id(unit)));
    p.bytes(field_number, v.data());
  }

  void encode_mapping(report::ProtoWriter& p, std::size_t i) {
    const Mapping& m = mappings_[i];
    report::ProtoWriter w;
    w.integer(1, i + 1);
    w.integer(2, m.start);
    w.integer(3, m.limit);
    w.integer(4, m.offset);
    w.integer(5, static_cast<std::uint64_t>(string_id(m.file)));
    w.integer_opt(6, static_cast<std::uint64_t>(string_id(m.build_id)));
    // Symbolized here, inline frames included: viewers need not look for the binaries.
    for (unsigned f = 7; f <= 10; ++f) w.boolean(f, true);
    p.bytes(profile_field::kMapping, w.data());
  }

  void encode_location(report::ProtoWriter& p, std::uint64_t id, const Location& loc) {
    report::ProtoWriter w;
    w.integer(1, id);
    w.integer_opt(2, loc.mapping_id);
    w.integer(3, loc.address != 0 ? loc.address : id);
    for (const Line& line : loc.lines) {
      report::ProtoWriter l;
      l.integer(1, line.function_id);
      l.integer_opt(2, static_cast<std::uint64_t>(line.line));
      w.bytes(4, l.data());
    }
    p.bytes(profile_field::kLocation, w.data());
  }

  std::vector<Mapping> mappings_;  // by start address
  // By location ids and the route's string id (0: none).
  std::map<std::pair<std::vector<std::uint64_t>, std::int64_t>, Values> samples_;
  std::map<std::uint64_t, Location> locations_;
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> functions_;  // name, file
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::int64_t> string_ids_;
};

}  // namespace

std::string pprof_profile(const Snapshot& now, const std::vector<Mapping>& mappings, ProfileView view,
                          const Snapshot* base) {
  ProfileBuilder builder(mappings);
  builder.add(now, +1);
  std::int64_t duration_ns = 0;
  if (base != nullptr) {
    builder.add(*base, -1);
    duration_ns = (now.info().taken_at_ms - base->info().taken_at_ms) * 1'000'000;
  }
  return builder.encode(now.info(), view, duration_ns);
}

LIVEHEAP_NAMESPACE_END
