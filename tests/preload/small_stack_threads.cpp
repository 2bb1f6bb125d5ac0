// Starts threads with the smallest stack POSIX allows (PTHREAD_STACK_MIN, 16 KiB here), each
// allocating from a few KiB down its stack, and prints the static TLS each loaded liveheap
// object takes from every thread's stack. Exit status: the threads that failed to start or
// run.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kThreads = 8;
constexpr std::size_t kStackUsed = 6 * 1024;  // the thread's own frames, before it allocates

void* run(void*) {
  volatile char frame[kStackUsed];
  std::memset(const_cast<char*>(frame), 1, sizeof frame);
  for (int i = 0; i < 100; ++i) {
    void* p = std::malloc(16 + i * 8);
    if (p == nullptr) return reinterpret_cast<void*>(1);
    std::free(p);
  }
  return frame[0] == 1 ? nullptr : reinterpret_cast<void*>(1);
}

int print_liveheap_tls(dl_phdr_info* info, std::size_t, void*) {
  if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "liveheap") == nullptr) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS)
      std::printf("tls %s %zu\n", info->dlpi_name, static_cast<std::size_t>(info->dlpi_phdr[i].p_memsz));
  return 0;
}

}  // namespace

int main() {
  dl_iterate_phdr(print_liveheap_tls, nullptr);
  int failed = 0;
  for (int i = 0; i < kThreads; ++i) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    pthread_t thread;
    if (const int error = pthread_create(&thread, &attr, run, nullptr); error != 0) {
      std::printf("pthread_create with a %ld-byte stack: %s\n", static_cast<long>(PTHREAD_STACK_MIN),
                  std::strerror(error));
      ++failed;
    } else {
      void* result = nullptr;
      pthread_join(thread, &result);
      if (result != nullptr) ++failed;
    }
    pthread_attr_destroy(&attr);
  }
  std::printf("threads %d started and ran %d\n", kThreads, kThreads - failed);
  return failed;
}
