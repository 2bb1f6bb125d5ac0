// Helpers of the end-to-end tests (e2e_support.hpp).
#include "e2e_support.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace liveheap::e2e {
namespace {

constexpr int kStartTimeoutMs = 20000;
constexpr int kWatchTimeoutMs = 60000;

// Our environment must not change what the programs under test do: defaults for what
// `env` leaves unset (a shell keeps the last of duplicates, so add none).
std::vector<std::string> clean_env(std::vector<std::string> env) {
  for (const std::string fallback : {"LIVEHEAP_TOKEN=", "LIVEHEAP_MODE=exact"}) {
    const std::string name = fallback.substr(0, fallback.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const auto& e) { return e.starts_with(name); }))
      env.push_back(fallback);
  }
  return env;
}

Reply expect_ok(Reply reply, std::string_view what) {
  if (reply.status != 200)
    throw std::runtime_error(std::string(what) + ": " + std::to_string(reply.status) + " " + reply.body);
  return reply;
}

// The argv running `program` with `args`; with `join_stderr`, through a shell that joins
// its stderr to stdout, the one pipe ChildProcess reads.
std::vector<std::string> command(const char* program, const std::vector<std::string>& args,
                                 bool join_stderr) {
  std::vector<std::string> argv = {program};
  if (join_stderr) argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", program};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

LeakyServer::LeakyServer(Launch launch) {
  std::vector<std::string> args = {"--port", "0", "--mode", "exact"};
  args.insert(args.end(), launch.args.begin(), launch.args.end());
  process_ = std::make_unique<http_test::ChildProcess>(
      command(LIVEHEAP_LEAKY_SERVER, args, launch.read_stderr), clean_env(std::move(launch.env)));
  const auto first = process_->read_line(kStartTimeoutMs);
  std::smatch match;
  static const std::regex kListening(R"(listening on http://127\.0\.0\.1:(\d+)/)");
  if (!first || !std::regex_search(*first, match, kListening))
    throw std::runtime_error("leaky_server did not say where it listens: '" + first.value_or("<nothing>") +
                             "'");
  port_ = static_cast<std::uint16_t>(std::stoi(match[1]));
}

std::string LeakyServer::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/debug/memory"; }

Reply LeakyServer::get(std::string_view target) const {
  return expect_ok(http_test::get(port_, target), "GET " + std::string(target));
}

Reply LeakyServer::post(std::string_view target) const {
  return expect_ok(http_test::post(port_, target), "POST " + std::string(target));
}

nlohmann::json LeakyServer::story(std::string_view target) const { return get(target).json(); }

nlohmann::json LeakyServer::diff(std::string_view query) const {
  return get("/debug/memory/diff?format=json&key=line&limit=200" + std::string(query)).json();
}

int marked_line(std::string_view mark) {
  std::ifstream source(LIVEHEAP_LEAK_STORIES_SOURCE);
  const std::string comment = "// " + std::string(mark);
  std::string text;
  for (int line = 1; std::getline(source, text); ++line)
    if (text.ends_with(comment)) return line;
  throw std::runtime_error("no line of leak_stories.cpp ends with '" + comment + "'");
}

nlohmann::json stat_at(const nlohmann::json& diff, int line) {
  for (const nlohmann::json& stat : diff.at("stats"))
    if (stat.at("file").get<std::string>().ends_with("/leak_stories.cpp") &&
        stat.at("line").get<int>() == line)
      return stat;
  return nullptr;
}

std::int64_t sum(const std::vector<nlohmann::json>& responses, const char* field) {
  std::int64_t total = 0;
  for (const nlohmann::json& response : responses) total += response.at(field).get<std::int64_t>();
  return total;
}

WatchRun run_watch(const std::vector<std::string>& args, std::vector<std::string> env) {
  http_test::ChildProcess watch(command(LIVEHEAP_WATCH, args, true), clean_env(std::move(env)));
  WatchRun run;
  while (const auto line = watch.read_line(kWatchTimeoutMs)) run.output += *line + "\n";
  run.exit_code = watch.wait(kWatchTimeoutMs);
  return run;
}

}  // namespace liveheap::e2e
