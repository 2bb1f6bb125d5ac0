// Display names for C++ functions, shortened as pprof does: template arguments become <…>,
// parameter lists, return types, ABI tags and clone suffixes go, so that a Boost.Asio
// handler's 6,000-character name reads boost::asio::detail::composed_op<…>::operator()<…>.
#include <array>
#include <cctype>
#include <string>
#include <string_view>

#include "liveheap/format.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

constexpr std::string_view kElided = "\u2026";
constexpr std::string_view kAnonymous = "(anonymous namespace)";

bool is_identifier(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

bool word_at(std::string_view text, std::size_t i, std::string_view word) {
  if (text.substr(i, word.size()) != word) return false;
  if (i > 0 && is_identifier(text[i - 1])) return false;
  const std::size_t end = i + word.size();
  return end == text.size() || !is_identifier(text[end]);
}

// Length of the operator's name at text[i] ("operator()", "operator<<", "operator new[]",
// "operator bool"), 0 when none starts there: its brackets are not brackets.
std::size_t operator_length(std::string_view text, std::size_t i) {
  constexpr std::string_view kOperator = "operator";
  if (!word_at(text, i, kOperator)) return 0;
  const std::size_t j = i + kOperator.size();
  static constexpr std::array<std::string_view, 38> kSymbols = {
      "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=",
      "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<",
      ">",   "+",   "-",   "*",   "/",  "%",  "&",  "|",  "^",  "~",  "!",  "="};
  for (std::string_view symbol : kSymbols)
    if (text.substr(j, symbol.size()) == symbol) return j + symbol.size() - i;
  if (text.substr(j, 1) == ",") return j + 1 - i;
  for (std::string_view word : {" new[]", " delete[]", " new", " delete"})
    if (text.substr(j, word.size()) == word) return j + word.size() - i;
  // A conversion ("operator bool", "operator unsigned long"): the type runs to its '(' or '<'.
  std::size_t end = j;
  while (end < text.size() && text[end] != '(' && text[end] != '<') ++end;
  while (end > j && text[end - 1] == ' ') --end;
  return end - i;
}

// Index just past the bracket group opened at text[i]; text.size() when it never closes.
// Inside parentheses '<' and '>' are comparisons, not brackets. Iterative: names can nest
// hundreds deep.
std::size_t skip_group(std::string_view text, std::size_t i) {
  std::string closers;
  for (; i < text.size(); ++i) {
    if (!closers.empty()) {
      if (const std::size_t n = operator_length(text, i)) {
        i += n - 1;
        continue;
      }
    }
    const char c = text[i];
    if (c == '(') closers.push_back(')');
    else if (c == '[') closers.push_back(']');
    else if (c == '{') closers.push_back('}');
    else if (c == '<' && (closers.empty() || closers.back() == '>')) closers.push_back('>');
    else if (!closers.empty() && c == closers.back()) {
      closers.pop_back();
      if (closers.empty()) return i + 1;
    }
  }
  return text.size();
}

// "(…)" for a non-empty group, "()" for an empty one; "<…>" likewise.
std::string elided(std::string_view group) {
  const char open = group.front();
  const std::string close(1, open == '(' ? ')' : '>');
  const bool empty = group.size() == 1 || (group.size() == 2 && group.back() == close[0]);
  return std::string(1, open) + (empty ? "" : std::string(kElided)) + close;
}

// "{lambda(auto:1)#2}" -> "{lambda(…)#2}": the braces stay, groups inside are elided.
std::string braced(std::string_view group) {
  std::string out;
  for (std::size_t i = 0; i < group.size();) {
    if (i > 0 && (group[i] == '(' || group[i] == '<') && i + 1 < group.size()) {
      const std::size_t end = std::min(skip_group(group, i), group.size() - 1);
      out += elided(group.substr(i, end - i));
      i = end;
    } else {
      out += group[i++];
    }
  }
  return out;
}

}  // namespace

std::string shown_function(const Frame& frame) {
  return is_route_frame(frame) || is_python_frame(frame) ? frame.function : short_function(frame.function);
}

std::string_view frame_kind(const Frame& frame) noexcept {
  return is_python_frame(frame) ? "python" : "native";
}

std::string short_function(std::string_view name) {
  std::string out;
  std::size_t i = 0;
  while (i < name.size()) {
    if (const std::size_t n = operator_length(name, i)) {
      out.append(name.substr(i, n));
      i += n;
      continue;
    }
    if (name.substr(i).starts_with(kAnonymous)) {
      out.append(kAnonymous);
      i += kAnonymous.size();
      continue;
    }
    if (word_at(name, i, "decltype")) {  // a return type: "decltype (…) f()"
      std::size_t open = i + 8;
      while (open < name.size() && name[open] == ' ') ++open;
      if (open < name.size() && name[open] == '(') {
        out += "decltype(" + std::string(kElided) + ")";
        i = skip_group(name, open);
        continue;
      }
    }
    const char c = name[i];
    if (c == '<') {
      const std::size_t end = skip_group(name, i);
      out += elided(name.substr(i, end - i));
      i = end;
    } else if (c == '(') {  // parameters: the name ends, unless a local entity's scope follows
      i = skip_group(name, i);
      if (!name.substr(i).starts_with("::")) break;
    } else if (c == '{') {
      const std::size_t end = skip_group(name, i);
      out += braced(name.substr(i, end - i));
      i = end;
    } else if (c == '[') {  // "[abi:cxx11]", "[clone .isra.0]"
      i = skip_group(name, i);
    } else if (c == ' ') {
      // A space before '<' belongs to "operator< <…>"; any other ends a return type
      // ("void ", "unsigned long ", "non-virtual thunk to ").
      if (i + 1 < name.size() && name[i + 1] == '<') out += ' ';
      else out.clear();
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  return out.empty() ? std::string(name) : out;
}

LIVEHEAP_NAMESPACE_END
