// Child processes for the overhead benchmark (see child_process.hpp): the environment it
// gives them, and a run to the end.
#include "child_process.hpp"

extern char** environ;

namespace bench {

// Inherited values of these would silently change what a row measures.
bool is_measurement_variable(const std::string& entry) {
  for (const char* prefix : {"LD_PRELOAD=", "LIVEHEAP_", "MALLOC_CONF=", "DUMP_HEAPTRACK_"})
    if (entry.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> child_environment(const Environment& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (!is_measurement_variable(*e)) env.emplace_back(*e);
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

Outcome run(const std::vector<std::string>& argv, const Environment& env, std::chrono::milliseconds timeout) {
  return Child(argv, env).finish(0, timeout);
}

std::string command_line(const std::vector<std::string>& argv, const Environment& env) {
  std::string text;
  for (const auto& [name, value] : env) text += name + "=" + value + " ";
  for (const std::string& arg : argv) text += arg + " ";
  if (!text.empty()) text.pop_back();
  return text;
}

}  // namespace bench
