// Walk states for threads (walk_state.hpp): one mapping each, on a list that only grows;
// a thread takes the state of a thread that exited, or maps one.
#include "walk_state.hpp"

#include <atomic>
#include <cerrno>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pages.hpp"

namespace liveheap::engine {
namespace {

struct WalkStateSlot {
  WalkState state;                // first: a state's address is its slot's
  std::atomic<pid_t> owner;       // the owning thread's id; never 0 once on the list
  WalkStateSlot* next = nullptr;  // the slot mapped before this one
};

std::atomic<WalkStateSlot*> g_slots{nullptr};   // the newest
std::atomic<WalkStateSlot*> g_search{nullptr};  // where the next search for an exited owner begins
std::atomic<std::uint64_t> g_mapped_slots{0};

// The owners a take asks the kernel about before it maps a state: a process whose threads
// come and go finds an exited one at once, one whose threads all live pays a few system
// calls once per thread.
constexpr int kOwnersAsked = 4;
// After a take that found no memory, the walks a thread makes without a state before it
// tries again.
constexpr std::uint32_t kWalksBeforeRetake = 1024;

[[gnu::tls_model("initial-exec")]] constinit thread_local bool t_taking = false;
[[gnu::tls_model("initial-exec")]] constinit thread_local std::uint32_t t_walks_since_failed_take = 0;

// Whether thread `tid` of this process is gone: signal 0 checks without sending.
bool exited(pid_t pid, pid_t tid) noexcept { return syscall(SYS_tgkill, pid, tid, 0) != 0 && errno == ESRCH; }

// The slot of a thread that exited, now marked `me`'s; nullptr when the few asked live.
WalkStateSlot* slot_of_an_exited_thread(pid_t me) noexcept {
  WalkStateSlot* s = g_search.load(std::memory_order_acquire);
  if (s == nullptr) s = g_slots.load(std::memory_order_acquire);
  if (s == nullptr) return nullptr;
  const pid_t pid = getpid();
  WalkStateSlot* found = nullptr;
  for (int asked = 0; asked < kOwnersAsked && found == nullptr; ++asked) {
    pid_t owner = s->owner.load(std::memory_order_acquire);
    if (owner != me && exited(pid, owner) &&
        s->owner.compare_exchange_strong(owner, me, std::memory_order_acq_rel))
      found = s;
    s = s->next != nullptr ? s->next : g_slots.load(std::memory_order_acquire);
  }
  g_search.store(s, std::memory_order_release);
  return found;
}

WalkStateSlot* mapped_slot(pid_t me) noexcept {
  auto* s = static_cast<WalkStateSlot*>(map_pages(sizeof(WalkStateSlot)));  // zeroed
  if (s == nullptr) return nullptr;
  s->owner.store(me, std::memory_order_relaxed);
  WalkStateSlot* head = g_slots.load(std::memory_order_relaxed);
  do s->next = head;
  while (!g_slots.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
  g_mapped_slots.fetch_add(1, std::memory_order_relaxed);
  return s;
}

// A state taken over, zeroed as a new one: its whole pages given back to the kernel (they
// read zero again, and an exited thread's spares it never used are not touched), the rest
// written. The slot's mapping starts at the state.
void zero_state(WalkState& state) noexcept {
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<std::uintptr_t>(&state);
  const std::uintptr_t end = begin + sizeof state;
  const std::uintptr_t pages_end = end & ~(kPage - 1);
  std::uintptr_t zeroed = begin;
  if (begin % kPage == 0 && pages_end > begin &&
      madvise(reinterpret_cast<void*>(begin), pages_end - begin, MADV_DONTNEED) == 0)
    zeroed = pages_end;
  __builtin_memset(reinterpret_cast<void*>(zeroed), 0, end - zeroed);
}

}  // namespace

constinit thread_local WalkState* t_walk_state = nullptr;

WalkState* take_walk_state() noexcept {
  if (t_taking) return nullptr;  // a signal handler's walk, while this thread takes one
  if (t_walks_since_failed_take != 0 && ++t_walks_since_failed_take < kWalksBeforeRetake) return nullptr;
  t_taking = true;
  const int saved_errno = errno;  // malloc leaves errno alone when it succeeds
  const pid_t me = gettid();
  WalkStateSlot* s = slot_of_an_exited_thread(me);
  if (s != nullptr) zero_state(s->state);
  else s = mapped_slot(me);
  t_walks_since_failed_take = s == nullptr ? 1 : 0;
  errno = saved_errno;
  if (s != nullptr) {
    s->state.repeated.name_own_walks();
    t_walk_state = &s->state;
  }
  t_taking = false;
  return t_walk_state;
}

void walk_state_after_fork_in_child() noexcept {
  if (WalkState* s = t_walk_state)
    reinterpret_cast<WalkStateSlot*>(s)->owner.store(gettid(), std::memory_order_release);
}

std::uint64_t walk_states_mapped() noexcept { return g_mapped_slots.load(std::memory_order_relaxed); }

bool walk_state_marked_mine() noexcept {
  const WalkState* s = t_walk_state;
  return s == nullptr ||
         reinterpret_cast<const WalkStateSlot*>(s)->owner.load(std::memory_order_acquire) == gettid();
}

}  // namespace liveheap::engine
