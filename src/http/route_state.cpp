// What the routes of one Handler share (see route_state.hpp).
#include "route_state.hpp"

#include "exports.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

std::variant<unsigned, std::string> read_metrics_callsites(const Config& config) {
  try {
    return metrics_callsites(config);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
}

}  // namespace

RouteState::RouteState(Config c) : config(std::move(c)), metrics_callsites(read_metrics_callsites(config)) {}

WindowSlot::WindowSlot(RouteState& state) : count_(state.windows) {
  if (count_.fetch_add(1) >= state.config.max_windows) {
    count_.fetch_sub(1);
    throw RequestError(Status::too_many_requests,
                       std::to_string(state.config.max_windows) +
                           " ?seconds= windows are already waiting; try again when one ends");
  }
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
