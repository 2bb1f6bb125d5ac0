// The per-address cache of names, and frames made of the symbolizer's answers (symbolizer.hpp).
#include "symbolizer.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <new>
#include <unordered_map>

#include <boost/core/demangle.hpp>

#include "code_locations.hpp"
#include "fork_safe_once.hpp"
#include "loaded_code.hpp"
#include "symbolizer_process.hpp"

namespace liveheap::symbolize {
namespace {

std::atomic<std::uint64_t> g_asked{0};
std::atomic<std::uint64_t> g_resolved{0};

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// An address's frames from what the symbolizer found there (`answer`, null without it): the
// inlined functions innermost first, then the function the code is in, named by its dynamic
// symbol, else the symbol table's, else the debug information's, else module+offset.
std::vector<Frame> frames_of(std::uintptr_t address, const CodeLocation& where, const wire::Answer* answer) {
  Frame f;
  f.address = address;
  f.module = where.module;
  std::vector<Frame> frames;
  if (answer != nullptr) {
    for (const wire::Located& in : answer->chain) {
      Frame frame = f;
      frame.function = in.function;
      frame.file = in.file;
      frame.line = in.line;
      frames.push_back(std::move(frame));
    }
  }
  if (where.in_object && !where.symbol.empty()) f.function = boost::core::demangle(where.symbol.c_str());
  else if (answer != nullptr) f.function = answer->symbol;
  if (f.function.empty() && !frames.empty()) f.function = frames.back().function;
  if (f.function.empty()) {
    char text[32];
    std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(where.offset));
    f.function = base_name(f.module.empty() ? "?" : f.module) + text;
  }
  if (frames.empty()) return {f};
  frames.back().function = f.function;
  return frames;
}

struct Cache {
  std::unordered_map<std::uintptr_t, std::vector<Frame>> frames;
  LoaderCounts loader;
};

// Never destroyed: reports may run while static destructors do.
class Names {
 public:
  static Names& instance() { return engine::fork_safe_once<Names, make>(); }

  std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses) {
    std::vector<std::vector<Frame>> out(addresses.size());
    std::vector<std::uintptr_t> missing;
    std::vector<std::size_t> missing_at;
    const LoaderCounts loader = loader_counts();
    {
      std::lock_guard lock(mutex_);
      // After a dlclose, a cached address may name code that is gone.
      if (loader.subs != cache_->loader.subs) cache_->frames.clear();
      cache_->loader = loader;
      for (std::size_t i = 0; i < addresses.size(); ++i) {
        if (auto it = cache_->frames.find(addresses[i]); it != cache_->frames.end()) {
          out[i] = it->second;
        } else {
          missing.push_back(addresses[i]);
          missing_at.push_back(i);
        }
      }
    }
    g_asked.fetch_add(addresses.size(), std::memory_order_relaxed);
    g_resolved.fetch_add(missing.size(), std::memory_order_relaxed);
    if (missing.empty()) return out;
    const CodeLocations located = locate(missing);
    wire::Request request;
    request.objects = located.objects;
    std::vector<std::size_t> query_of(missing.size(), SIZE_MAX);
    for (std::size_t k = 0; k < missing.size(); ++k) {
      if (!located.at[k].query) continue;
      query_of[k] = request.queries.size();
      request.queries.push_back(*located.at[k].query);
    }
    std::optional<wire::Reply> reply;
    Status now;
    now.asked = true;
    if (!request.queries.empty()) {
      try {
        reply = ask_symbolizer_process(request);
        now.pid = static_cast<pid_t>(reply->pid);
        now.rss_bytes = reply->rss_bytes;
        now.files = reply->files;
      } catch (const std::exception& e) {
        now.problem = e.what();
      }
    }
    std::lock_guard lock(mutex_);
    if (!request.queries.empty()) status_ = now;
    for (std::size_t k = 0; k < missing.size(); ++k) {
      const wire::Answer* answer = reply && query_of[k] != SIZE_MAX ? &reply->answers[query_of[k]] : nullptr;
      out[missing_at[k]] = frames_of(missing[k], located.at[k], answer);
      // Names made without the symbolizer are not kept: the next report asks again.
      if (reply || !located.at[k].query) cache_->frames.emplace(missing[k], out[missing_at[k]]);
    }
    return out;
  }

  Status status() {
    std::lock_guard lock(mutex_);
    return status_;
  }

 private:
  static Names* make() {
    auto* names = new Names;
    pthread_atfork(nullptr, nullptr, [] { instance().after_fork_in_child(); });
    return names;
  }

  // fork() while another thread held the lock or was changing the cache: the child starts
  // with fresh ones (the parent's copies are left alone, never freed half-changed).
  void after_fork_in_child() {
    new (&mutex_) std::mutex;
    cache_ = new Cache;
    new (&status_) Status;
  }

  std::mutex mutex_;
  Cache* cache_ = new Cache;  // guarded by mutex_
  Status status_;             // guarded by mutex_
};

}  // namespace

std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses) {
  return Names::instance().symbolize(addresses);
}

Counts counts() noexcept {
  return {g_asked.load(std::memory_order_relaxed), g_resolved.load(std::memory_order_relaxed)};
}

Status status() { return Names::instance().status(); }

}  // namespace liveheap::symbolize
