// A complete, small Boost.Beast HTTP server with liveheap mounted in one line, modelled on
// Beast's example/http/server/async (Boost 1.81: handle_request returns message_generator).
// The session and listener, with the mount line, are in beast_session.hpp.
//
//   beast_server [--host 127.0.0.1] [--port 8080]      (--port 0 picks a free port)
//   curl -X POST localhost:8080/debug/memory/baseline
//   curl 'localhost:8080/leak?kb=100'                  # a deliberate leak, at one line
//   curl localhost:8080/debug/memory/diff
//
// Tracking starts from LIVEHEAP_MODE and friends (default: exact); see liveheap/tracker.hpp.
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>

#include "beast_session.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

//------------------------------------------------------------------------------

// What /leak keeps forever: the kind of growth liveheap is for.
std::vector<std::unique_ptr<char[]>> g_leaked;

// Returns a response with `status` and a text body.
http::message_generator text_response(const http::request<http::string_body>& req,
                                      http::status status, std::string body) {
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::server, BOOST_BEAST_VERSION_STRING);
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body) + "\n";
  res.prepare_payload();
  return res;
}

// The server's own routes: GET /hello, and GET /leak?kb=N which keeps N KiB forever.
http::message_generator sample::handle_request(http::request<http::string_body>&& req) {
  if (req.method() != http::verb::get)
    return text_response(req, http::status::method_not_allowed, "GET only");
  const std::string_view target = req.target();
  if (target == "/hello") return text_response(req, http::status::ok, "hello");
  constexpr std::string_view kLeak = "/leak?kb=";
  if (target.starts_with(kLeak)) {
    const std::string_view digits = target.substr(kLeak.size());
    std::size_t kb = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), kb);
    if (ec != std::errc() || end != digits.data() + digits.size() || kb == 0 || kb > 65536)
      return text_response(req, http::status::bad_request, "kb must be 1..65536");
    auto block = std::make_unique<char[]>(kb * 1024);  // the line /diff will name
    g_leaked.push_back(std::move(block));
    return text_response(req, http::status::ok, "leaked " + std::to_string(kb) + " KiB");
  }
  return text_response(req, http::status::not_found, "try /hello, /leak?kb=N, /debug/memory/");
}

//------------------------------------------------------------------------------

int main(int argc, char* argv[]) {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--host") host = argv[i + 1];
    else if (flag == "--port") port = argv[i + 1];
    else argc = -1;
  }
  if (argc < 0 || argc % 2 == 0) {
    std::cerr << "Usage: beast_server [--host 127.0.0.1] [--port 8080]\n";
    return EXIT_FAILURE;
  }

  try {
    if (const auto options = liveheap::options_from_environment(liveheap::Mode::exact))
      liveheap::start(*options);
  } catch (const std::exception& e) {
    std::cerr << "liveheap: " << e.what() << "; tracking stays off\n";
  }
  // The routes under /debug/memory; LIVEHEAP_TOKEN, when set, guards them.
  liveheap::http::Config config;
  if (const char* token = std::getenv("LIVEHEAP_TOKEN")) config.token = token;
  // The io_context is required for all I/O; one thread is enough for this sample. It is
  // declared first so that it outlives the handler's pending responses (which hold sessions).
  net::io_context ioc{1};
  liveheap::http::Handler liveheap_handler(config);
  try {
    const unsigned long number = std::stoul(port);
    if (number > 65535) throw std::out_of_range("port above 65535");
    const tcp::endpoint endpoint{net::ip::make_address(host), static_cast<unsigned short>(number)};
    auto server = std::make_shared<sample::listener>(ioc, endpoint, liveheap_handler);
    std::cout << "listening on http://" << host << ":" << server->port() << "/" << std::endl;
    server->run();
  } catch (const std::exception& e) {
    std::cerr << "beast_server: cannot serve on " << host << ":" << port << ": " << e.what()
              << "\n";
    return EXIT_FAILURE;
  }
  ioc.run();
  return EXIT_SUCCESS;
}
