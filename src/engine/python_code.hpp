// Reading a CPython code object in place, as the thread that runs it: its file and
// qualified name (str objects), and the line of an instruction from its location table.
// Every object is checked to be of the type expected before any field is read, and a
// value out of range fails the read: a wrong guess yields no frame, never a wrong one.
// Thread-safety: reads only; the caller's thread runs the frame, which holds the code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "python_runtime.hpp"

namespace liveheap::engine {

// A T read in place from the host's memory at `address` (any alignment): the interpreter's
// structures, read without calling it.
template <typename T>
T read_at(std::uintptr_t address) noexcept {
  T value;
  __builtin_memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);
  return value;
}

// A str's characters in place: `length` code points of `kind` bytes each (1, 2 or 4).
struct PythonText {
  const unsigned char* data = nullptr;
  std::uint32_t length = 0;
  std::uint8_t kind = 1;
  // The str's own hash of its characters, -1 until the interpreter computed it (a name or
  // a file name almost always has it: interning computes it).
  std::int64_t hash = -1;
};

struct PythonCode {
  std::uintptr_t address = 0;
  PythonText file, qualname;
  std::uintptr_t file_object = 0, qualname_object = 0, linetable_object = 0;
  const unsigned char* linetable = nullptr;
  std::uint32_t linetable_size = 0;
  std::int32_t first_line = 0;
  std::int32_t first_traceable = 0;  // instructions before it are the frame's set-up
  std::uint32_t units = 0;           // instructions (2-byte code units)
  std::uintptr_t instructions = 0;   // the first one's address
};

// The code object at `address`; false when it is none or a field is out of range.
bool read_code(const PythonRuntime& py, std::uintptr_t address, PythonCode* out) noexcept;

// The line of instruction `index` (0 when it has none, as tracemalloc reports it), and in
// `*prefix` how many bytes of the location table decide it (its entries up to the one
// holding the instruction); -1 when the table ends first or is malformed.
std::int32_t line_of_instruction(const PythonCode& code, std::uint32_t index, std::uint32_t* prefix) noexcept;

// A hash of everything a frame's (file, name, line) is computed from: the file and name's
// characters (their str's own hash of them where it is computed: the same assurance, with
// no pass over the characters), the first line and the first `prefix` bytes of the location
// table. A code object freed and another made at its address gives another fingerprint
// unless its frame's text is the same.
std::uint64_t code_fingerprint(const PythonCode& code, std::uint32_t prefix) noexcept;

// `text` as UTF-8 into `out` (at most `capacity` - 1 bytes, cut at a character, then NUL);
// the bytes written.
std::size_t to_utf8(const PythonText& text, char* out, std::size_t capacity) noexcept;

}  // namespace liveheap::engine
