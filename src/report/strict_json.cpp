// The strict JSON readers every typed answer's from_json shares (see strict_json.hpp).
#include "strict_json.hpp"

namespace liveheap::report {
namespace {

// What `value` is, for a message: where a number was expected, why this one will not do.
std::string describe(const json& value, bool numeric) {
  if (value.is_number()) {
    if (!numeric) return "a number";
    if (value.is_number_float()) return "a fraction";
    return !value.is_number_unsigned() && value.get<std::int64_t>() < 0 ? "negative" : "too large";
  }
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_string()) return "a string";
  return value.is_array() ? "an array" : "an object";
}

bool fits_int64(const json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() || v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX));
}

}  // namespace

void fail(const std::string& path, const std::string& what) { throw FieldError(path + " " + what); }

std::string join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

const json& field(const json& object, const std::string& path, std::string_view name) {
  const auto it = object.find(name);
  if (it == object.end()) fail(join(path, name), "is missing");
  return *it;
}

void expect(bool ok, const json& value, const std::string& path, const char* type) {
  const std::string_view t(type);
  const bool numeric = t.starts_with("an integer") || t == "a whole number" || t == "a process id";
  if (!ok) fail(path, "is " + describe(value, numeric) + ", not " + type);
}

void expect_object(const json& v, const std::string& path) { expect(v.is_object(), v, path, "an object"); }

bool non_negative(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

std::int64_t integer(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(fits_int64(v), v, join(path, name), "an integer");
  return v.get<std::int64_t>();
}

std::uint64_t whole(const json& object, const std::string& path, std::string_view name, std::uint64_t max) {
  const json& v = field(object, path, name);
  expect(non_negative(v) && v.get<std::uint64_t>() <= max, v, join(path, name), "a whole number");
  return v.get<std::uint64_t>();
}

double number(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_number(), v, join(path, name), "a number");
  return v.get<double>();
}

bool boolean(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_boolean(), v, join(path, name), "true or false");
  return v.get<bool>();
}

std::string text(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_string(), v, join(path, name), "a string");
  return v.get<std::string>();
}

const json& array(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_array(), v, join(path, name), "an array");
  return v;
}

const json& object(const json& parent, const std::string& path, std::string_view name) {
  const json& v = field(parent, path, name);
  expect_object(v, join(path, name));
  return v;
}

std::vector<std::string> strings(const json& object, const std::string& path, std::string_view name) {
  std::vector<std::string> out;
  const json& list = array(object, path, name);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = join(path, name) + "[" + std::to_string(i) + "]";
    expect(list[i].is_string(), list[i], at, "a string");
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

std::optional<std::int64_t> integer_or_null(const json& object, const std::string& path,
                                            std::string_view name) {
  const json& v = field(object, path, name);
  if (v.is_null()) return std::nullopt;
  expect(fits_int64(v), v, join(path, name), "an integer or null");
  return v.get<std::int64_t>();
}

TrackerMemoryCap cap_from(const json& parent, const std::string& path, std::string_view name) {
  const json& j = object(parent, path, name);
  const std::string at = join(path, name);
  TrackerMemoryCap cap;
  cap.max_bytes = integer(j, at, "max_bytes");
  cap.reached = boolean(j, at, "reached");
  cap.folded_blocks = whole(j, at, "folded_blocks");
  cap.folded_bytes = integer(j, at, "folded_bytes");
  cap.dropped_blocks = whole(j, at, "dropped_blocks");
  cap.dropped_bytes = integer(j, at, "dropped_bytes");
  return cap;
}

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace liveheap::report
