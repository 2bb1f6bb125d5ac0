// The verdict's end-to-end target: serves "requests" (a 64 KiB buffer allocated and freed, and
// a 1 KiB block leaked per request) until it reads "idle" on stdin, then allocates nothing
// until stdin closes. Prints "LEAK <line>" at start and "IDLE" once it stopped working.
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Leaked {
  Leaked* next;
  char payload[1016];
};
Leaked* g_leaked = nullptr;
int g_leak_line = 0;

[[gnu::noinline]] void leak_one() {
  auto* node = static_cast<Leaked*>(std::malloc(sizeof(Leaked))); g_leak_line = __LINE__;
  node->next = g_leaked;
  g_leaked = node;
}

[[gnu::noinline]] void serve_one() {
  auto* buffer = static_cast<char*>(std::malloc(64 * 1024));
  std::memset(buffer, 1, 64 * 1024);
  asm volatile("" : : "r"(buffer) : "memory");
  std::free(buffer);
  leak_one();
}

// A line from stdin if one is ready within `timeout_ms`; "" otherwise, "EOF" at its end.
std::string read_command(int timeout_ms) {
  pollfd in{0, POLLIN, 0};
  if (::poll(&in, 1, timeout_ms) <= 0) return "";
  char buffer[64];
  const ssize_t n = ::read(0, buffer, sizeof buffer);
  if (n <= 0) return "EOF";
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace

int main() {
  serve_one();  // g_leak_line is known from here on
  std::printf("LEAK %d\n", g_leak_line);
  std::fflush(stdout);
  for (;;) {  // a request every 10 ms
    const std::string command = read_command(10);
    if (command == "EOF") return 0;
    if (command.starts_with("idle")) break;
    serve_one();
  }
  std::printf("IDLE\n");
  std::fflush(stdout);
  while (read_command(-1) != "EOF") {
  }
  return 0;
}
