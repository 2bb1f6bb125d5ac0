// The threads of a process as the kernel lists them (/proc/<pid>/task): what tests read each
// thread's state, signal mask or context switches from. Header-only, as wait.hpp.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace test_support {

// The thread ids of `pid` (empty when it is gone), and the directory their files are in.
inline std::string task_dir(pid_t pid) { return "/proc/" + std::to_string(pid) + "/task"; }

inline std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> tids;
  if (DIR* dir = ::opendir(task_dir(pid).c_str())) {
    while (const dirent* entry = ::readdir(dir))
      if (const pid_t tid = std::atoi(entry->d_name); tid > 0) tids.push_back(tid);
    ::closedir(dir);
  }
  return tids;
}

// A thread's state letter from its stat line ('R', 'S', 'T', ...), or '\0' when it is gone.
inline char thread_state(pid_t pid, pid_t tid) {
  std::ifstream stat(task_dir(pid) + "/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto after_name = line.rfind(')');  // the state follows the command's name
  return after_name != std::string::npos && after_name + 2 < line.size() ? line[after_name + 2] : '\0';
}

}  // namespace test_support
