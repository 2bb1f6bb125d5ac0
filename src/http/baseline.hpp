// The baseline that /diff compares against, shared by every request of a Handler: a
// StackSnapshot (integers), symbolized only when a /diff shows it.
// Thread-safety: all members may be called from any thread; mutex_ guards baseline_.
#pragma once

#include <memory>
#include <mutex>

#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

class BaselineStore {
 public:
  void set(StackSnapshot snapshot);
  // nullptr until set. A shared pointer, so a /diff in progress keeps the baseline it
  // started with while another request replaces it.
  std::shared_ptr<const StackSnapshot> get() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const StackSnapshot> baseline_;  // guarded by mutex_
};

}  // namespace http
LIVEHEAP_NAMESPACE_END
