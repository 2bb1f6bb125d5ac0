// The offsets liveheap reads CPython 3.11's frames by (src/engine/python_layout.hpp) against
// that version's own headers: a layout that drifted from them would read wrong frames.
#define Py_BUILD_CORE 1  // the interpreter's internal headers: _PyInterpreterFrame
#include <Python.h>
#include <internal/pycore_frame.h>

#include <cstddef>

#include <gtest/gtest.h>

#include "python_layout.hpp"

namespace liveheap::engine {
namespace {

static_assert(PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION == 11, "the headers of CPython 3.11");

TEST(PythonLayout, EveryOffsetOf311IsWhereItsHeadersPutIt) {
  const PythonLayout& l = kPython311;
  EXPECT_EQ(l.minor, static_cast<std::uint32_t>(PY_MINOR_VERSION));
  EXPECT_EQ(l.thread_cframe, offsetof(PyThreadState, cframe));
  EXPECT_EQ(l.cframe_current_frame, offsetof(_PyCFrame, current_frame));
  EXPECT_EQ(l.frame_code, offsetof(_PyInterpreterFrame, f_code));
  EXPECT_EQ(l.frame_previous, offsetof(_PyInterpreterFrame, previous));
  EXPECT_EQ(l.frame_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
  EXPECT_EQ(l.frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
  EXPECT_EQ(l.frame_owner, offsetof(_PyInterpreterFrame, owner));
  EXPECT_EQ(l.owned_by_generator, FRAME_OWNED_BY_GENERATOR);
  EXPECT_EQ(l.object_type, offsetof(PyObject, ob_type));
  EXPECT_EQ(l.var_size, offsetof(PyVarObject, ob_size));
  EXPECT_EQ(l.code_filename, offsetof(PyCodeObject, co_filename));
  EXPECT_EQ(l.code_qualname, offsetof(PyCodeObject, co_qualname));
  EXPECT_EQ(l.code_linetable, offsetof(PyCodeObject, co_linetable));
  EXPECT_EQ(l.code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  EXPECT_EQ(l.code_first_traceable, offsetof(PyCodeObject, _co_firsttraceable));
  EXPECT_EQ(l.code_units, offsetof(PyCodeObject, co_code_adaptive));
  EXPECT_EQ(l.str_length, offsetof(PyASCIIObject, length));
  EXPECT_EQ(l.str_hash, offsetof(PyASCIIObject, hash));
  EXPECT_EQ(l.str_state, offsetof(PyASCIIObject, state));
  EXPECT_EQ(l.str_ascii_data, sizeof(PyASCIIObject));
  EXPECT_EQ(l.str_compact_data, sizeof(PyCompactUnicodeObject));
  EXPECT_EQ(l.bytes_data, offsetof(PyBytesObject, ob_sval));
}

}  // namespace
}  // namespace liveheap::engine
