// A program that sets its process title as redis, nginx and postgres do: it overwrites
// the memory of argv[0] (and the arguments after it) with a title, then keeps known
// bytes, for the process-title tests. Runs unmodified under LD_PRELOAD.
//
//   title_program     overwrite argv, print "TITLED", read "go" on stdin, keep 3 blocks
//                     of 1000 bytes, print "KEPT", then wait for EOF
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

void* g_keep[3];  // outside any namespace: the stores (and the mallocs) must stay

namespace {

[[gnu::noinline]] void keep_known() {
  for (auto& block : g_keep) block = std::malloc(1000);
}

}  // namespace

int main(int argc, char** argv) {
  // The argument strings are contiguous: setproctitle writes over all of them at once.
  char* end = argv[argc - 1] + std::strlen(argv[argc - 1]);
  std::memset(argv[0], 0, static_cast<std::size_t>(end - argv[0]));
  const char title[] = "worker: 127.0.0.1(52284) SELECT";
  std::memcpy(argv[0], title, std::min(sizeof title - 1, static_cast<std::size_t>(end - argv[0])));
  std::cout << "TITLED" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "go") continue;
    keep_known();
    std::cout << "KEPT" << std::endl;
  }
  return 0;
}
