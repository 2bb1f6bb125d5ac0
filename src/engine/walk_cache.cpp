// Keeping a walk for the next one (walk_cache.hpp). Runs after the walk, not on its path.
#include "walk_cache.hpp"

namespace liveheap::engine {
namespace {

using Steps = WalkCache::Steps;
using Fresh = WalkCache::Fresh;
constexpr std::uint32_t kSteps = WalkCache::kSteps;

// Cached step `to` := fresh step `from` (output frame `frame`), written at clock `now`,
// after the steps further out (their checks end at steps.checks_from[to + 1]).
[[gnu::always_inline]] inline void put_fresh(Steps& steps, std::uint32_t to, const Fresh& fresh,
                                             std::uint32_t from, std::uintptr_t frame, std::uint64_t now,
                                             bool ended_outermost) noexcept {
  steps.stamp[to] = now;
  steps.sp[to] = fresh.sp[from];
  steps.key[to] = fresh.key[from];
  steps.bp[to] = fresh.bp[from];
  steps.cfa[to] = fresh.cfa[from];
  steps.rule[to] = fresh.rule[from];
  steps.frame[to] = frame;
  const std::int16_t rbp_slot = FrameRule::rbp_slot_of(fresh.rule[from]);
  // The checks go below those of the steps further out: the saved rbp (read second) first.
  std::uint32_t c = steps.checks_from[to + 1];
  if (rbp_slot != 0 && steps.needs_bp[to + 1]) {
    --c;
    steps.check[c] = {fresh.cfa[from] + rbp_slot, fresh.bp_after[from]};
    steps.check_step[c] = static_cast<std::uint8_t>(to);
  }
  --c;
  steps.check[c] = {fresh.cfa[from] - 8, frame};
  steps.check_step[c] = static_cast<std::uint8_t>(to);
  steps.checks_from[to] = static_cast<std::uint8_t>(c);
  steps.needs_bp[to] =
      FrameRule::cfa_from_rbp_of(fresh.rule[from]) || (rbp_slot == 0 && steps.needs_bp[to + 1]);
  if (to == kSteps - 1) {
    steps.bp_at_end = fresh.bp_after[from];
    steps.outermost_at_end = ended_outermost;
  }
  steps.restores[to] = static_cast<std::uint8_t>(steps.restores[to + 1] + (rbp_slot != 0));
}

}  // namespace

std::uint64_t WalkCache::remember(const std::uintptr_t* frames, std::uint32_t n, const Reused* reused,
                                  std::uint32_t reused_count, std::uint32_t recorded,
                                  bool ended_outermost) noexcept {
  std::uint32_t taken = 0;
  for (std::uint32_t k = 0; k < reused_count && k < kMaxReused; ++k)
    taken += reused[k].out_end - reused[k].out_begin;
  count_walk(n, taken);
  // The common case: this walk's own inner steps, then the cache's steps to its outermost
  // (or to the frame limit). The cached steps stay where they are; the new ones go below.
  if (reused_count == 1 && reused[0].out_end == n && reused[0].step_begin >= reused[0].out_begin &&
      reused[0].out_begin <= recorded) {
    const Reused& r = reused[0];
    if (r.out_begin > kCheapSteps) skipped = 0;
    const std::uint32_t new_first = r.step_begin - r.out_begin;
    StackHash hash = StackHash::resume(steps.hash[r.step_begin]);
    const std::uint64_t now = r.out_begin > 0 ? ++clock : clock;
    for (std::uint32_t j = r.out_begin; j-- > 0;) {
      const std::uint32_t to = new_first + j;
      put_fresh(steps, to, fresh, j, frames[j], now, ended_outermost);
      hash.add(frames[j]);
      steps.hash[to] = hash.state();
    }
    first = new_first;
    // The states fold from the cache's outermost step: the walk's own when it reused
    // the cache up to there.
    if (r.step_begin + (r.out_end - r.out_begin) == kSteps) return hash.finish(n);
    return hash_frames(frames, n);
  }

  // Otherwise the cache becomes this walk, every step of it: the reused ones first copied
  // out of the cache (into the fresh steps, whose places they took in the output).
  if (n > recorded) {  // the walk's own steps were not all recorded: the cache stays
    ++skipped;
    return hash_frames(frames, n);
  }
  if (n > kSteps || reused_count > kMaxReused) {
    first = kSteps;
    return hash_frames(frames, n);
  }
  if (n > kCheapSteps) skipped = 0;
  // The registers of a reused step are this walk's, not those of the walk that cached it:
  // a saved rbp that no step used was not checked, and may have been another. So rbp is
  // followed through the run again from where the run began, reading each saved rbp from
  // its slot (a stack word of this walk's, which the run checked its way to).
  for (std::uint32_t k = 0; k < reused_count; ++k) {
    const Reused& r = reused[k];
    std::uintptr_t bp = r.bp;
    for (std::uint32_t j = r.out_begin, s = r.step_begin; j < r.out_end; ++j, ++s) {
      fresh.sp[j] = steps.sp[s];
      fresh.key[j] = steps.key[s];
      fresh.bp[j] = bp;
      fresh.cfa[j] = steps.cfa[s];
      fresh.rule[j] = steps.rule[s];
      if (const std::int16_t rbp_slot = FrameRule::rbp_slot_of(steps.rule[s]); rbp_slot != 0)
        bp = *reinterpret_cast<const std::uintptr_t*>(steps.cfa[s] + rbp_slot);
      fresh.bp_after[j] = bp;
    }
  }
  StackHash hash;
  const std::uint32_t new_first = kSteps - n;
  const std::uint64_t now = ++clock;
  for (std::uint32_t j = n; j-- > 0;) {
    const std::uint32_t to = new_first + j;
    put_fresh(steps, to, fresh, j, frames[j], now, ended_outermost);
    hash.add(frames[j]);
    steps.hash[to] = hash.state();
  }
  first = new_first;
  return hash.finish(n);
}

}  // namespace liveheap::engine
