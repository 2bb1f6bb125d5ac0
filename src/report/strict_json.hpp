// Reading a JSON answer back strictly, for every typed answer's from_json: each field of its
// schema must be there with its type, or the error names the field and what it was
// ("report JSON: stats[2].size_diff is missing", "stats JSON: rss is a string, not an integer").
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "liveheap/snapshot.hpp"

namespace liveheap::report {

using nlohmann::json;

// What the readers below throw: "<path> <what>"; read_strictly puts the document's name first.
class FieldError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] void fail(const std::string& path, const std::string& what);
// "a.b" ("b" at the top).
std::string join(const std::string& path, std::string_view name);

const json& field(const json& object, const std::string& path, std::string_view name);
// Fails unless `ok`, saying what `value` is instead of `type` ("an integer", "a string", ...).
void expect(bool ok, const json& value, const std::string& path, const char* type);
void expect_object(const json& value, const std::string& path);
// A number >= 0 (parsed text gives an unsigned one; a value built in C++ may be signed).
bool non_negative(const json& value);

std::int64_t integer(const json& object, const std::string& path, std::string_view name);
std::uint64_t whole(const json& object, const std::string& path, std::string_view name,
                    std::uint64_t max = UINT64_MAX);
double number(const json& object, const std::string& path, std::string_view name);
bool boolean(const json& object, const std::string& path, std::string_view name);
std::string text(const json& object, const std::string& path, std::string_view name);
const json& array(const json& object, const std::string& path, std::string_view name);
const json& object(const json& parent, const std::string& path, std::string_view name);
std::vector<std::string> strings(const json& object, const std::string& path, std::string_view name);
// An integer or null (null: std::nullopt).
std::optional<std::int64_t> integer_or_null(const json& object, const std::string& path,
                                            std::string_view name);

// The tracker-memory cap as to_json(const TrackerMemoryCap&) writes it (liveheap/json.hpp).
TrackerMemoryCap cap_from(const json& parent, const std::string& path, std::string_view name);

// A word of the schema: `parse` throws std::invalid_argument for anything else.
template <typename Parse>
auto word(const json& object, const std::string& path, std::string_view name, Parse parse) {
  const std::string value = text(object, path, name);
  try {
    return parse(value);
  } catch (const std::invalid_argument& e) {
    fail(join(path, name), std::string("is not known: ") + e.what());
  }
}

// read(document), its FieldErrors as std::invalid_argument named after the document
// (`name`: "stats JSON").
template <typename Read>
auto read_strictly(std::string_view name, const json& document, Read read) {
  try {
    return read(document);
  } catch (const FieldError& e) {
    throw std::invalid_argument(std::string(name) + ": " + e.what());
  }
}
// The same from text, which must be one JSON object.
template <typename Read>
auto read_strictly(std::string_view name, std::string_view text, Read read) {
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) throw std::invalid_argument(std::string(name) + ": the text is not JSON");
  return read_strictly(name, document, [&](const json& j) {
    expect_object(j, "the document");
    return read(j);
  });
}

// One line of JSON as every answer writes it: invalid UTF-8 (a symbol's bytes) as U+FFFD.
std::string dump(const json& value);

}  // namespace liveheap::report
