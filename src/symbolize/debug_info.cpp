// The libbacktrace state behind the symbolizer, re-created (boundedly) as objects come and go.
#include "debug_info.hpp"

#include <cstddef>
#include <cstdio>
#include <dlfcn.h>
#include <link.h>

#include <backtrace.h>
#include <boost/core/demangle.hpp>

#include "main_program.hpp"

namespace liveheap::symbolize {
namespace {

std::string base_name(const char* path) {
  std::string_view p(path == nullptr ? "" : path);
  const auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

struct InlineFrame {
  std::string function;
  std::string file;
  unsigned line;
};

// Innermost first: the inlined functions, then the function the code physically is in.
std::vector<InlineFrame> inline_chain(backtrace_state* state, std::uintptr_t pc) {
  std::vector<InlineFrame> chain;
  if (state == nullptr) return chain;
  backtrace_pcinfo(
      state, pc,
      [](void* data, std::uintptr_t, const char* file, int line, const char* function) {
        if (file == nullptr && function == nullptr) return 0;
        static_cast<std::vector<InlineFrame>*>(data)->push_back(
            {function == nullptr ? "" : boost::core::demangle(function), file == nullptr ? "" : file,
             static_cast<unsigned>(line < 0 ? 0 : line)});
        return 0;
      },
      [](void*, const char*, int) {}, &chain);
  return chain;
}

// The symbol `pc` is in, qualified (DWARF names are not): the dynamic symbol table first,
// as Boost.Stacktrace's frame::name() does, then the full one.
std::string symbol_name(backtrace_state* state, const Dl_info& info, bool found, std::uintptr_t pc) {
  if (found && info.dli_sname != nullptr) return boost::core::demangle(info.dli_sname);
  std::string name;
  if (state == nullptr) return name;
  backtrace_syminfo(
      state, pc,
      [](void* out, std::uintptr_t, const char* symbol, std::uintptr_t, std::uintptr_t) {
        if (symbol != nullptr) *static_cast<std::string*>(out) = boost::core::demangle(symbol);
      },
      [](void*, const char*, int) {}, &name);
  return name;
}

}  // namespace

LoaderCounts loader_counts() {
  LoaderCounts counts;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        // The counters are there when the callback's size covers them (glibc >= 2.4).
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
          *static_cast<LoaderCounts*>(out) = {info->dlpi_adds, info->dlpi_subs};
        return 1;  // the same in every entry: one is enough
      },
      &counts);
  return counts;
}

void DebugInfo::refresh(LoaderCounts now) {
  if (now == counts_) return;
  counts_ = now;
  if (state_ != nullptr) forget_unloaded();
}

void DebugInfo::make_state() {
  backtrace_state* fresh = backtrace_create_state(nullptr, 0, [](void*, const char*, int) {}, nullptr);
  if (fresh == nullptr) return;
  ++states_made_;
  state_ = fresh;
  state_counts_ = counts_;
  known_ = loaded_segments();
}

DebugInfo::Segments DebugInfo::loaded_segments() {
  Segments segments;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
          const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          static_cast<Segments*>(out)->emplace(
              start, Segment{start + ph.p_memsz, info->dlpi_addr,
                             info->dlpi_name == nullptr ? "" : info->dlpi_name});
        }
        return 0;
      },
      &segments);
  return segments;
}

// An object unloaded since the state was made is not trusted any more, even where other
// code comes to its addresses (the same object back at the same place is).
void DebugInfo::forget_unloaded() {
  const Segments now = loaded_segments();
  std::erase_if(known_, [&](const auto& entry) {
    const auto it = now.find(entry.first);
    return it == now.end() || it->second.object_base != entry.second.object_base ||
           it->second.object_name != entry.second.object_name;
  });
}

// The state's answers hold for code in an object it read and that is still there.
backtrace_state* DebugInfo::state_for(std::uintptr_t pc, const char* object_name) const {
  if (state_ == nullptr) return nullptr;
  auto it = known_.upper_bound(pc);
  if (it == known_.begin()) return nullptr;
  --it;
  if (pc >= it->second.end) return nullptr;
  // dl_iterate_phdr names the main program "" (it is never unloaded), dladdr by its path.
  return it->second.object_name.empty() || it->second.object_name == object_name ? state_ : nullptr;
}

std::vector<Frame> DebugInfo::resolve(std::uintptr_t address) {
  Frame f;
  f.address = address;
  // A return address points after the call; the call's own line is one byte before.
  const std::uintptr_t pc = address - 1;
  Dl_info info{};
  f.module = object_file(reinterpret_cast<void*>(pc), info);
  const bool found = info.dli_fbase != nullptr;
  std::uintptr_t offset = address;
  if (found) offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  backtrace_state* state = state_for(pc, info.dli_fname == nullptr ? "" : info.dli_fname);
  // Code the state never read, in an object loaded since: read the objects again (boundedly).
  if (state == nullptr && found && (state_ == nullptr || state_counts_ != counts_) &&
      states_made_ < kMaxStates) {
    make_state();
    state = state_for(pc, f.module.c_str());
  }
  std::vector<Frame> frames;
  for (InlineFrame& in : inline_chain(state, pc)) {
    Frame frame = f;
    frame.function = std::move(in.function);
    frame.file = std::move(in.file);
    frame.line = in.line;
    frames.push_back(std::move(frame));
  }
  // The function the code is in, by its symbol; else module+offset when it has none.
  f.function = symbol_name(state, info, found, pc);
  if (f.function.empty() && !frames.empty()) f.function = frames.back().function;
  if (f.function.empty()) {
    char text[32];
    std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(offset));
    f.function = base_name(f.module.empty() ? "?" : f.module.c_str()) + text;
  }
  if (frames.empty()) return {f};
  frames.back().function = f.function;
  return frames;
}

}  // namespace liveheap::symbolize
