// liveheap-watch: polls a server's liveheap /diff and prints the top growth every round;
// with --fail-over, a leak gate for CI (exit 1 when growth passes the threshold).
#include <cstdlib>
#include <iostream>

#include "http_client.hpp"
#include "options.hpp"
#include "watch.hpp"

int main(int argc, char* argv[]) {
  using namespace liveheap::cli;
  try {
    const auto options = parse_command_line(argc, argv, std::getenv("LIVEHEAP_TOKEN"));
    if (!options) {
      std::cout << usage();
      return kExitOk;
    }
    return watch(*options, std::cout, std::cerr);
  } catch (const UsageError& e) {
    std::cerr << "liveheap-watch: " << e.what() << "\n\n" << usage();
  } catch (const std::exception& e) {
    // ConnectionError and ServerError: the message already says what and where.
    std::cerr << "liveheap-watch: " << e.what() << "\n";
  }
  return kExitError;
}
