// GroupIndex: which group each trace belongs to under a key, decided once per distinct frame.
#include "grouping.hpp"

#include <charconv>
#include <stdexcept>

namespace liveheap::report {
namespace {

void append_field(std::string* id, std::string_view field) {
  id->append(field);
  id->push_back('\0');  // fields cannot contain NUL: the id is unambiguous
}

void append_number(std::string* id, int value) {
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  append_field(id, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

// The identity of one frame under `key` (for `traceback`, its part of the stack's identity),
// written into `id` (cleared first: a scratch string reused for every frame, so that a frame
// whose group exists already costs no allocation).
void frame_id(const Frame& f, KeyType key, std::string* id) {
  id->clear();
  switch (key) {
    case KeyType::line:
      // One group per source line, whatever the address; without debug info the
      // "module+offset" function text is the line.
      if (f.file.empty()) append_field(id, f.function);
      else append_field(id, f.file), append_number(id, f.line);
      break;
    case KeyType::file: append_field(id, f.file.empty() ? f.module : f.file); break;
    case KeyType::function:
    case KeyType::route: append_field(id, f.function); break;
    case KeyType::traceback:
      append_field(id, f.file);
      append_number(id, f.line);
      append_field(id, f.file.empty() ? f.function : std::string_view{});
      break;
  }
}

// The number of `id` in `ids`, numbering it `next` if it is new (*inserted set then).
std::uint32_t number_of(std::unordered_map<std::string, std::uint32_t>& ids, const std::string& id,
                        std::uint32_t next, bool* inserted) {
  if (const auto it = ids.find(id); it != ids.end()) {
    *inserted = false;
    return it->second;
  }
  *inserted = true;
  ids.emplace(id, next);
  return next;
}

// The one-frame key a report shows for frame i of `tb` under `key` (not `traceback`):
// for `line` the frame itself (sharing the table), else only the keyed field is meaningful.
Traceback frame_key(const Traceback& tb, std::size_t i, KeyType key) {
  const Frame& f = tb[i];
  switch (key) {
    case KeyType::file: return {Frame{"", f.file.empty() ? f.module : f.file, 0, f.module, 0}};
    case KeyType::function: return {Frame{f.function, f.file, 0, f.module, 0}};
    case KeyType::route: return {route_frame(f.function)};
    case KeyType::line:
    case KeyType::traceback: break;
  }
  return tb.slice(i, 1);
}

}  // namespace

std::string group_id(const Frame& frame, KeyType key) {
  std::string id;
  frame_id(frame, key, &id);
  return id;
}

std::size_t GroupIndex::FrameNumbersHash::operator()(
    const std::vector<std::uint32_t>& frames) const noexcept {
  std::size_t h = frames.size();
  for (std::uint32_t f : frames) h ^= f + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

GroupIndex::GroupIndex(KeyType key, bool cumulative) : key_(key), cumulative_(cumulative) {
  if (cumulative && key == KeyType::traceback)
    throw std::invalid_argument("cumulative mode cannot be used with key 'traceback'");
}

std::vector<Totals> GroupIndex::sum(const std::vector<Trace>& traces) {
  std::vector<Totals> totals(keys_.size());
  auto add = [&](std::uint32_t group, const Trace& trace) {
    if (group >= totals.size()) totals.resize(keys_.size());
    totals[group].size += trace.size;
    totals[group].count += trace.count;
    totals[group].alloc_size += trace.alloc_size;
    totals[group].alloc_count += trace.alloc_count;
  };
  for (const Trace& trace : traces) {
    const Traceback& tb = trace.traceback;
    if (key_ == KeyType::traceback) {
      add(group_of_stack(tb), trace);
    } else if (key_ == KeyType::route) {
      add(group_of_route(tb), trace);  // one route a trace: cumulative changes nothing
    } else if (!cumulative_) {
      add(tb.empty() ? group_of_empty() : group_of_frame(tb, user_frames_.index(tb)), trace);
    } else {
      // Every frame counts the trace, but once per trace: unlike tracemalloc, recursion
      // (the same line twice in one stack) does not count a block twice.
      ++trace_number_;
      for (std::size_t i = 0; i < tb.size(); ++i) {
        const std::uint32_t group = group_of_frame(tb, i);
        if (last_counted_[group] == trace_number_) continue;
        last_counted_[group] = trace_number_;
        add(group, trace);
      }
    }
  }
  totals.resize(keys_.size());
  return totals;
}

template <typename MakeKey>
std::uint32_t GroupIndex::group_of_id(const std::string& id, MakeKey&& make_key) {
  bool inserted = false;
  const std::uint32_t group = number_of(group_ids_, id, static_cast<std::uint32_t>(keys_.size()), &inserted);
  if (inserted) {
    keys_.push_back(make_key());
    last_counted_.push_back(0);
  }
  return group;
}

std::uint32_t GroupIndex::group_of_frame(const Traceback& tb, std::size_t i) {
  return of_frame_.get(tb, i, [this](const Traceback& t, std::size_t j) {
    frame_id(t[j], key_, &id_);
    return group_of_id(id_, [&] { return frame_key(t, j, key_); });
  });
}

// The route of the request that allocated the trace, by name.
std::uint32_t GroupIndex::group_of_route(const Traceback& tb) {
  const std::string_view route = route_of(tb);
  id_.assign(route);
  return group_of_id(id_, [&] { return Traceback{route_frame(route)}; });
}

// A trace without frames is grouped as one whose user frame is blank.
std::uint32_t GroupIndex::group_of_empty() {
  static const Frame kBlank;
  frame_id(kBlank, key_, &id_);
  return group_of_id(id_, [] { return Traceback{kBlank}; });
}

// The whole stack is the key: frames are numbered by their identity once each, then a
// stack is its list of frame numbers.
std::uint32_t GroupIndex::group_of_stack(const Traceback& tb) {
  stack_.clear();
  for (std::size_t i = 0; i < tb.size(); ++i)
    stack_.push_back(of_frame_.get(tb, i, [this](const Traceback& t, std::size_t j) {
      frame_id(t[j], key_, &id_);
      bool inserted = false;
      return number_of(frame_ids_, id_, static_cast<std::uint32_t>(frame_ids_.size()), &inserted);
    }));
  const auto [it, inserted] = stacks_.try_emplace(stack_, static_cast<std::uint32_t>(keys_.size()));
  if (inserted) keys_.push_back(tb);
  return it->second;
}

}  // namespace liveheap::report
