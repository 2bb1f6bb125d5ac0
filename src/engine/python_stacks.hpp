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

// `native` (innermost first, `depth` frames: the whole stack, so that its evaluator frames
// can be counted against the runs) with its evaluator frames replaced by this thread's
// Python frames, into `out` (at most `max` frames; outer frames past it are cut); its
// depth, or 0 when this thread runs no Python frames here or they cannot be read or
// placed (then the native stack is kept as it is). Native frames from `keep_native` on are
// left out (the frame limit), but their evaluator frames still take their runs, which then
// follow the native frames kept, outermost last.
std::uint32_t merge_python_frames(const PythonRuntime& py, const std::uintptr_t* native, std::uint32_t depth,
                                  std::uint32_t keep_native, std::uintptr_t* out, std::uint32_t max) noexcept;

}  // namespace liveheap::engine
