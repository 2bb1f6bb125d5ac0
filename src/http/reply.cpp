// Building responses: headers, text or JSON, one-line failure reasons.
#include "reply.hpp"

#include <new>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// True when `text` contains `word`, ignoring ASCII case (Accept values are case-insensitive).
bool icontains(std::string_view text, std::string_view word) {
  for (std::size_t at = 0; at + word.size() <= text.size(); ++at)
    if (boost::beast::iequals(text.substr(at, word.size()), word)) return true;
  return false;
}

}  // namespace

ReplyTo reply_to(const Request& req) {
  ReplyTo to{req.version(), req.keep_alive(), Format::text};
  const std::string_view target = req.target();
  const auto query = target.find('?');
  if (query != std::string_view::npos) {
    // A lenient look: the strict parse reports a bad value, in the format chosen here.
    const std::string_view params = target.substr(query);
    const bool json = params.find("format=json") != std::string_view::npos;
    if (json || params.find("format=text") != std::string_view::npos) {
      to.format = json ? Format::json : Format::text;
      return to;
    }
  }
  if (icontains(req[boost::beast::http::field::accept], "application/json")) to.format = Format::json;
  return to;
}

Response make_response(const ReplyTo& to, Status status, std::string body, std::string_view content_type) {
  namespace bh = boost::beast::http;
  Response res{status, to.version};
  res.set(bh::field::server, "liveheap");
  res.set(bh::field::content_type, content_type);
  // Reports describe one moment: a cached copy would be a wrong answer.
  res.set(bh::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  // No page may frame the dashboard (clickjacking its buttons), and the dashboard runs only
  // its own files: no inline script or style, nothing from elsewhere (data: is its favicon).
  res.set("X-Frame-Options", "DENY");
  res.set("Content-Security-Policy", kContentSecurityPolicy);
  res.keep_alive(to.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response make_json(const ReplyTo& to, Status status, const nlohmann::json& body) {
  return make_response(to, status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                       "application/json");
}

Response make_text(const ReplyTo& to, Status status, std::string body) {
  if (body.empty() || body.back() != '\n') body += '\n';
  return make_response(to, status, std::move(body), "text/plain; charset=utf-8");
}

Response make_error(const ReplyTo& to, Status status, std::string_view reason) {
  std::string line(reason);
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';  // one line, whatever the reason's source
  if (to.format == Format::json) return make_json(to, status, {{"error", line}});
  return make_text(to, status, std::move(line));
}

Response failure_response(const ReplyTo& to) {
  try {
    throw;
  } catch (const RequestError& e) {
    return make_error(to, e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(to, Status::service_unavailable, "out of memory");
  } catch (const std::exception& e) {
    return make_error(to, Status::internal_server_error, std::string("internal error: ") + e.what());
  } catch (...) {
    return make_error(to, Status::internal_server_error, "internal error");
  }
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
