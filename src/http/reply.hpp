// Building responses: the one place that sets headers, picks text or JSON, and turns a
// failure into a one-line reason. Thread-safety: pure functions.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>

#include "liveheap/http.hpp"
#include "liveheap/report_query.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

using Status = boost::beast::http::status;

// How an answer is laid out (the report layer's request model says it: report_query.hpp).
using Format = AnswerFormat;

// Sent with every response; the dashboard (web/static) keeps to it.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'";

// What every response to one request shares.
struct ReplyTo {
  unsigned version = 11;
  bool keep_alive = false;
  Format format = Format::text;
  std::size_t max_report_bytes = std::size_t{8} << 20;  // Config::max_report_bytes
};

// ?format= when it is valid (query.cpp rejects it otherwise), else JSON when Accept asks
// for application/json: even the reason for a bad request comes in the client's format.
ReplyTo reply_to(const Request& req);

// A request the routes refuse, with the status and the one-line reason to send.
class RequestError : public std::runtime_error {
 public:
  RequestError(Status status, const std::string& reason) : std::runtime_error(reason), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

Response make_response(const ReplyTo& to, Status status, std::string body, std::string_view content_type);
// JSON rendered strictly as UTF-8 (invalid bytes in a symbol name become U+FFFD).
Response make_json(const ReplyTo& to, Status status, const nlohmann::json& body);
// `body` as text/plain, ending with a newline.
Response make_text(const ReplyTo& to, Status status, std::string body);
// The response for the exception being handled (a 4xx for a RequestError, 503 out of
// memory, else 500 with its reason); call only inside a catch.
Response failure_response(const ReplyTo& to);

// {"error": reason} or "reason\n".
Response make_error(const ReplyTo& to, Status status, std::string_view reason);

}  // namespace http
LIVEHEAP_NAMESPACE_END
