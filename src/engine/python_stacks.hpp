// Python frames in native stacks (CPython 3.11): each evaluator frame of a native stack
// (_PyEval_EvalFrameDefault) is replaced by the Python frames it runs, read from the
// thread's own frame chain at the allocation.
// In 3.11 one evaluator frame runs a chain of Python calls: Python-to-Python calls are
// made without a new C call, and the frame where the evaluator was entered from C is
// marked `is_entry`. So the chain, innermost first, splits into runs that each end at an
// entry frame, and the k-th evaluator frame of the native stack (innermost first) runs the
// k-th run. A frame still being set up (before its first traceable instruction) is left
// out, as CPython's own tracebacks leave it. When the counts disagree on a whole stack
// (an evaluator entered or left between its frame's push and pop), nothing is merged: a
// stack keeps its native frames rather than get a wrong one.
// Thread-safety: reads the calling thread's own frames only.
#pragma once

#include <cstdint>

#include "python_runtime.hpp"

namespace liveheap::engine {

// `native` (innermost first, `depth` frames; `truncated`: the walk stopped at its frame
// limit, so outer frames are missing) with its evaluator frames replaced by this thread's
// Python frames, into `out` (at most `max` frames; outer frames past it are cut); its
// depth, or 0 when this thread runs no Python frames here or they cannot be read or
// placed (then the native stack is kept as it is). With `truncated`, the runs of the
// evaluator frames the walk did not reach follow the native frames, outermost last.
std::uint32_t merge_python_frames(const PythonRuntime& py, const std::uintptr_t* native, std::uint32_t depth,
                                  bool truncated, std::uintptr_t* out, std::uint32_t max) noexcept;

}  // namespace liveheap::engine
