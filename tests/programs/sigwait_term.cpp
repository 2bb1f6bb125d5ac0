// A server's shutdown idiom: block SIGTERM in the main thread (before starting threads of its
// own, so they inherit the mask), work, and collect the signal with sigwait when the work
// is done; exit 0. A SIGTERM sent while it works stays pending for sigwait, unless a thread
// that does not block SIGTERM takes it: then the default action kills the process (143).
// Its "work" is reading a line from stdin, so the test decides when the signal arrives.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

int main() {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::thread worker([] {  // a thread of the program's own, with SIGTERM blocked
    void* p = std::malloc(1000);
    std::free(p);
  });
  worker.join();
  std::cout << "ready" << std::endl;
  std::string line;
  std::getline(std::cin, line);  // the work, during which SIGTERM arrives
  int signal = 0;
  sigwait(&term, &signal);
  std::cout << "got signal " << signal << std::endl;
  return 0;
}
