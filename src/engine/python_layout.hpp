// Where CPython keeps what a Python frame is made of, per supported version: byte offsets
// into its thread state, interpreter frames, code objects, str and bytes objects (x86-64).
// liveheap reads them in place, without the GIL and without calling the interpreter
// (python_stacks.cpp, python_code.cpp), so a layout is used only for the exact minor version
// it was taken from. Adding a version: its offsets here (tests/engine/python_layout_test.cpp
// checks 3.11's against its own headers: do the same for the new one), its location-table
// decoder if the format changed (python_code.cpp), and its frame-chain rules
// (python_stacks.cpp) if the interpreter's changed.
#pragma once

#include <cstdint>

namespace liveheap::engine {

struct PythonLayout {
  std::uint32_t minor = 0;  // 3.<minor>
  // PyThreadState
  std::uint32_t thread_cframe = 0;
  // _PyCFrame
  std::uint32_t cframe_current_frame = 0;
  // _PyInterpreterFrame
  std::uint32_t frame_code = 0;
  std::uint32_t frame_previous = 0;
  std::uint32_t frame_prev_instr = 0;
  std::uint32_t frame_is_entry = 0;
  std::uint32_t frame_owner = 0;
  std::uint8_t owned_by_generator = 0;
  // PyObject, PyVarObject
  std::uint32_t object_type = 0;
  std::uint32_t var_size = 0;
  // PyCodeObject
  std::uint32_t code_filename = 0;
  std::uint32_t code_qualname = 0;
  std::uint32_t code_linetable = 0;
  std::uint32_t code_firstlineno = 0;
  std::uint32_t code_first_traceable = 0;
  std::uint32_t code_units = 0;  // co_code_adaptive: the instructions, 2 bytes each
  // str (PyASCIIObject, PyCompactUnicodeObject)
  std::uint32_t str_length = 0;
  std::uint32_t str_hash = 0;  // the str's hash once computed, else -1
  std::uint32_t str_state = 0;
  std::uint32_t str_ascii_data = 0;    // sizeof(PyASCIIObject)
  std::uint32_t str_compact_data = 0;  // sizeof(PyCompactUnicodeObject)
  // bytes
  std::uint32_t bytes_data = 0;
};

// CPython 3.11.x: one layout for every 3.11 release (checked on 3.11.2 and 3.11.7).
inline constexpr PythonLayout kPython311{
    .minor = 11,
    .thread_cframe = 56,
    .cframe_current_frame = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_prev_instr = 56,
    .frame_is_entry = 68,
    .frame_owner = 69,
    .owned_by_generator = 1,
    .object_type = 8,
    .var_size = 16,
    .code_filename = 112,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_firstlineno = 72,
    .code_first_traceable = 168,
    .code_units = 184,
    .str_length = 16,
    .str_hash = 24,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
    .bytes_data = 32,
};

// The layout for CPython 3.<minor>, or nullptr when that version is not supported.
inline const PythonLayout* python_layout(std::uint32_t minor) noexcept {
  return minor == kPython311.minor ? &kPython311 : nullptr;
}

}  // namespace liveheap::engine
