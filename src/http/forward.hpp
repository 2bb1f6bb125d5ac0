// ?pid= and GET /processes: the process holding the port answers for every process of its
// registry group (registry.hpp). pid=N forwards the request over N's Unix socket and
// returns N's response as it is; pid=all on GET /diff, GET /top and POST /baseline asks
// every process and merges their statistics by key (sums), held to Config::max_report_bytes
// as one process's report is. The exchanges are a Forward (outcome.hpp): the Handler runs
// them asynchronously, all of one request's at once, each with short timeouts
// (local_client.hpp), so a stopped process is named unreachable within seconds; a
// forwarded ?seconds= window holds one of this process's window places.
// Forwarding is a stage around the routes (routes.cpp calls it before it runs a route):
// this process's own share of a pid=all answer is asked of the caller (AnswerHere), never
// by dispatching the request again.
// Thread-safety: pure functions of their arguments, the registry and the peers' sockets.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "liveheap/history.hpp"

#include "outcome.hpp"
#include "query.hpp"
#include "reply.hpp"
#include "route_state.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// This process's answer to the request's route with another target (the route's path and
// the query a merge asks every process), as if asked without pid=; never a window.
using AnswerHere = std::function<Response(const std::string& target)>;

// The answer for query.pid (another process, or all); std::nullopt when it is this
// process's own pid, which the route answers as usual. `route` is the path below the
// prefix; `here` answers this process's share of a pid=all merge, at once.
std::optional<Outcome> answer_for_pid(RouteState& state, const Request& req, const ReplyTo& to,
                                      std::string_view route, const Query& query, const AnswerHere& here);

// pid=all: `into`, a statistic summed so far, takes the verdict of `other`, the same key's
// statistic from another process. Each process judged its own history: when they agree the
// verdict stands (growth per minute summed, the most recent growth kept); when they differ
// it is "unknown", as the sum's series is no process's history and no second rule guesses.
// The reasons merge as the sum's: retention weighted by what each allocated, the shortest
// idle. (merge_verdicts in the report layer is the one rule; these are its http faces.)
void merge_verdict(Verdict& into, const Verdict& other);
// The same on two JSON statistics; nothing when either has no "verdict".
void merge_verdict(nlohmann::json& into, const nlohmann::json& other);

// How many live processes the group has, this one included (1 without a registry).
std::size_t group_size();

// GET /processes: every live process of the group, this one included.
Forward processes_report(RouteState& state, const ReplyTo& to);

}  // namespace http
LIVEHEAP_NAMESPACE_END
