// Code objects, their str fields and the 3.11 location table (CPython's
// Objects/locations.md): one entry per run of instructions, a first byte with bit 7 set,
// the entry's kind in bits 3-6 and its run length - 1 in bits 0-2, then varints.
#include "python_code.hpp"

namespace liveheap::engine {
namespace {

bool of_type(std::uintptr_t object, std::uintptr_t type, const PythonLayout& l) noexcept {
  return object != 0 && (object & 7) == 0 && read_at<std::uintptr_t>(object + l.object_type) == type;
}

// Names and paths longer than this are not read (none is, in practice).
constexpr std::uint32_t kMaxTextLength = 4096;
constexpr std::uint32_t kMaxLinetable = 1u << 24;

bool read_text(const PythonRuntime& py, std::uintptr_t object, PythonText* out) noexcept {
  const PythonLayout& l = *py.layout;
  if (!of_type(object, py.str_type, l)) return false;
  const auto length = read_at<std::int64_t>(object + l.str_length);
  const auto state = read_at<std::uint32_t>(object + l.str_state);
  // state: interned:2, kind:3, compact:1, ascii:1, ready:1 (from the lowest bit)
  const std::uint8_t kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) || length < 0 ||
      length > kMaxTextLength)
    return false;
  out->data =
      reinterpret_cast<const unsigned char*>(object + (ascii ? l.str_ascii_data : l.str_compact_data));
  out->length = static_cast<std::uint32_t>(length);
  out->kind = kind;
  out->hash = read_at<std::int64_t>(object + l.str_hash);
  return true;
}

// A varint of 6-bit chunks, least significant first, bit 6 set on all but the last.
bool read_varint(const unsigned char*& p, const unsigned char* end, std::uint32_t* value) noexcept {
  std::uint32_t v = 0;
  for (unsigned shift = 0; p < end && shift < 32; shift += 6) {
    const unsigned char b = *p++;
    v |= static_cast<std::uint32_t>(b & 63) << shift;
    if ((b & 64) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  // 8 bytes a step: the table and the names are read on every cached frame's check. The
  // last 1-7 bytes are read as the word that ends with them, its first bytes shifted out:
  // `p` is a str's or a bytes' characters, with the object's header in the 8 bytes before.
  void bytes(const unsigned char* p, std::size_t n) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) word(read_at<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p + i)));
    const std::size_t rest = n - i;
    const std::uint64_t tail =
        rest == 0 ? 0
                  : read_at<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p + n - 8)) >> (8 * (8 - rest));
    word(tail ^ (std::uint64_t{rest} << 56));
  }
  // A str: its characters, or its own hash of them once computed. The two forms differ in
  // their last word, so a fingerprint taken before the hash was computed is not mistaken
  // for one taken after (it only misses once).
  void text(const PythonText& t) noexcept {
    if (t.hash != -1) {
      word(static_cast<std::uint64_t>(t.hash));
      word(t.length ^ std::uint64_t{t.kind} << 40 ^ std::uint64_t{1} << 48);
      return;
    }
    bytes(t.data, std::size_t{t.length} * t.kind);
    word(t.length ^ std::uint64_t{t.kind} << 40);
  }
  void word(std::uint64_t w) noexcept {
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
};

}  // namespace

bool read_code(const PythonRuntime& py, std::uintptr_t address, PythonCode* out) noexcept {
  const PythonLayout& l = *py.layout;
  if (!of_type(address, py.code_type, l)) return false;
  out->address = address;
  out->file_object = read_at<std::uintptr_t>(address + l.code_filename);
  out->qualname_object = read_at<std::uintptr_t>(address + l.code_qualname);
  out->linetable_object = read_at<std::uintptr_t>(address + l.code_linetable);
  if (!read_text(py, out->file_object, &out->file) || !read_text(py, out->qualname_object, &out->qualname) ||
      !of_type(out->linetable_object, py.bytes_type, l))
    return false;
  const auto table_size = read_at<std::int64_t>(out->linetable_object + l.var_size);
  const auto units = read_at<std::int64_t>(address + l.var_size);
  if (table_size < 0 || table_size > kMaxLinetable || units <= 0 || units > (1 << 26)) return false;
  out->linetable = reinterpret_cast<const unsigned char*>(out->linetable_object + l.bytes_data);
  out->linetable_size = static_cast<std::uint32_t>(table_size);
  out->first_line = read_at<std::int32_t>(address + l.code_firstlineno);
  out->first_traceable = read_at<std::int32_t>(address + l.code_first_traceable);
  out->units = static_cast<std::uint32_t>(units);
  out->instructions = address + l.code_units;
  return true;
}

std::int32_t line_of_instruction(const PythonCode& code, std::uint32_t index,
                                 std::uint32_t* prefix) noexcept {
  const unsigned char* p = code.linetable;
  const unsigned char* const end = p + code.linetable_size;
  std::int64_t line = code.first_line;
  std::uint32_t start = 0;  // the entry's first instruction
  while (p < end) {
    const unsigned char first = *p++;
    if ((first & 0x80) == 0) return -1;  // not an entry's start: malformed
    const unsigned kind = (first >> 3) & 15;
    const std::uint32_t run = (first & 7) + 1;
    std::int64_t delta = 0;
    if (kind == 13 || kind == 14) {  // no columns; long form: a signed varint first
      std::uint32_t v = 0;
      if (!read_varint(p, end, &v)) return -1;
      delta = (v & 1) ? -static_cast<std::int64_t>(v >> 1) : static_cast<std::int64_t>(v >> 1);
    } else if (kind >= 10 && kind <= 12) {  // one line, 0-2 below the last
      delta = kind - 10;
    }
    // Skip the rest of the entry: to the next byte with bit 7 set.
    while (p < end && (*p & 0x80) == 0) ++p;
    line += delta;
    if (index < start + run) {
      *prefix = static_cast<std::uint32_t>(p - code.linetable);
      if (kind == 15) return 0;  // no location
      return line < 0 || line > INT32_MAX ? 0 : static_cast<std::int32_t>(line);
    }
    start += run;
  }
  return -1;
}

std::uint64_t code_fingerprint(const PythonCode& code, std::uint32_t prefix) noexcept {
  Fnv h;
  h.text(code.file);
  h.text(code.qualname);
  h.word(static_cast<std::uint32_t>(code.first_line));
  h.bytes(code.linetable, prefix < code.linetable_size ? prefix : code.linetable_size);
  return h.h;
}

std::size_t to_utf8(const PythonText& text, char* out, std::size_t capacity) noexcept {
  std::size_t o = 0;
  for (std::uint32_t i = 0; i < text.length; ++i) {
    std::uint32_t c = text.kind == 1 ? text.data[i]
                      : text.kind == 2
                          ? read_at<std::uint16_t>(reinterpret_cast<std::uintptr_t>(text.data) + 2 * i)
                          : read_at<std::uint32_t>(reinterpret_cast<std::uintptr_t>(text.data) + 4 * i);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) || c < 0x20 || c == 0x7F) c = '?';
    char bytes[4];
    std::size_t n = 0;
    if (c < 0x80) bytes[n++] = static_cast<char>(c);
    else if (c < 0x800)
      bytes[n++] = static_cast<char>(0xC0 | c >> 6), bytes[n++] = static_cast<char>(0x80 | (c & 63));
    else if (c < 0x10000)
      bytes[n++] = static_cast<char>(0xE0 | c >> 12), bytes[n++] = static_cast<char>(0x80 | ((c >> 6) & 63)),
      bytes[n++] = static_cast<char>(0x80 | (c & 63));
    else
      bytes[n++] = static_cast<char>(0xF0 | c >> 18), bytes[n++] = static_cast<char>(0x80 | ((c >> 12) & 63)),
      bytes[n++] = static_cast<char>(0x80 | ((c >> 6) & 63)), bytes[n++] = static_cast<char>(0x80 | (c & 63));
    if (o + n + 1 > capacity) break;
    __builtin_memcpy(out + o, bytes, n);
    o += n;
  }
  if (capacity > 0) out[o] = '\0';
  return o;
}

}  // namespace liveheap::engine
