// The baseline that /diff compares against.
#include "baseline.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

void BaselineStore::set(StackSnapshot snapshot) {
  // Built outside the lock: the lock only ever guards a pointer swap.
  auto baseline = std::make_shared<const StackSnapshot>(std::move(snapshot));
  std::lock_guard lock(mutex_);
  baseline_.swap(baseline);
}

std::shared_ptr<const StackSnapshot> BaselineStore::get() const {
  std::lock_guard lock(mutex_);
  return baseline_;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
