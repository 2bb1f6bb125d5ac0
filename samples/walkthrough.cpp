// leaky_server's start-up text: the steps of the README's "How to read a diff", ready to paste.
#include "walkthrough.hpp"

namespace leaky {

void print_walkthrough(std::ostream& out, const std::string& host, std::uint16_t port,
                       liveheap::Mode mode, bool token) {
  // An IPv6 address needs brackets in a URL.
  const std::string address = host.find(':') == std::string::npos ? host : "[" + host + "]";
  const std::string base = "http://" + address + ":" + std::to_string(port);
  out << "leaky_server: listening on " << base << "/ (liveheap: " << liveheap::to_string(mode)
      << ")\n"
      << "dashboard: " << base << "/debug/memory/\n"
      << "\n"
      << "Walkthrough (paste into another shell):\n"
      << "  S=" << base << (token ? "; A=\"Authorization: Bearer $LIVEHEAP_TOKEN\"" : "")
      << "\n";
  const std::string auth = token ? " -H \"$A\"" : "";
  out << "  # 1. remember the heap as it is now\n"
      << "  curl" << auth << " -X POST $S/debug/memory/baseline\n"
      << "  # 2. traffic: three leaks, a cache that fills up, a route that cleans up\n"
      << "  for i in $(seq 10); do curl -s $S/client; curl -s $S/figure; "
         "curl -s \"$S/convert?rows=20000\"; done >/dev/null\n"
      << "  for i in $(seq 64); do curl -s \"$S/cache?shape=${i}x${i}\"; curl -s $S/ok; sleep 0.1; "
         "done >/dev/null\n"
      << "  # 3. what grew since the baseline, by line (key=traceback|function|file also work)\n"
      << "  curl" << auth << " \"$S/debug/memory/diff?limit=8\"\n"
      << "  # 4. the biggest stacks, whole\n"
      << "  curl" << auth << " \"$S/debug/memory/tracebacks?limit=3\"\n"
      << "  # 5. watch it grow, or gate CI on it (liveheap-watch is built in <build>/src/cli)\n"
      << "  liveheap-watch" << (token ? " --token \"$LIVEHEAP_TOKEN\"" : "")
      << " --url $S/debug/memory --interval 5\n"
      << "  # 6. the fix: drop the leaked objects, then give the memory back to the system\n"
      << "  curl -X POST $S/release; curl" << auth << " -X POST $S/debug/memory/trim\n"
      << std::endl;
}

}  // namespace leaky
