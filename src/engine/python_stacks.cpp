// The thread's Python frame chain, read in place, merged into its native stack.
#include "python_stacks.hpp"

#include "python_code.hpp"
#include "python_frame_table.hpp"

namespace liveheap::engine {
namespace {

// The innermost frames of a deeper chain are kept (a stack holds 128 frames at most), and
// the chain is cut there. Small: this runs on the host's stack, inside its malloc.
constexpr std::uint32_t kMaxPythonFrames = 128;
constexpr std::uint32_t kMaxRuns = 32;

struct Chain {
  std::uintptr_t frames[kMaxPythonFrames];
  std::uint32_t run_end[kMaxRuns];  // run k is frames[run_end[k-1] .. run_end[k])
  std::uint32_t count = 0, runs = 0;
  bool cut = false;  // outer frames left out
};

// This thread's Python frames, innermost first, split into runs at entry frames; false
// when it has none or they cannot be read.
bool read_chain(const PythonRuntime& py, Chain* chain) noexcept {
  void* thread = py.this_thread_state();
  if (thread == nullptr) return false;
  // Without the GIL a thread's frames are still its own, but while the interpreter shuts
  // down another thread may free this thread's state: read then only under the GIL.
  if (py.gil_holder() != thread && py.finalizing() != 0) return false;
  const PythonLayout& l = *py.layout;
  const auto cframe = read_at<std::uintptr_t>(reinterpret_cast<std::uintptr_t>(thread) + l.thread_cframe);
  if (cframe == 0 || (cframe & 7) != 0) return false;
  auto frame = read_at<std::uintptr_t>(cframe + l.cframe_current_frame);
  for (std::uint32_t walked = 0; frame != 0; frame = read_at<std::uintptr_t>(frame + l.frame_previous)) {
    if ((frame & 7) != 0) return false;
    if (++walked > 4 * kMaxPythonFrames || chain->count == kMaxPythonFrames || chain->runs == kMaxRuns) {
      const std::uint32_t closed = chain->runs == 0 ? 0 : chain->run_end[chain->runs - 1];
      if (chain->runs < kMaxRuns && closed != chain->count)
        chain->run_end[chain->runs++] = chain->count;  // the cut run, as far as it goes
      chain->cut = true;
      return chain->runs > 0;
    }
    PythonCode code;
    if (!read_code(py, read_at<std::uintptr_t>(frame + l.frame_code), &code)) return false;
    const auto instruction = read_at<std::uintptr_t>(frame + l.frame_prev_instr);
    const bool generator = read_at<std::uint8_t>(frame + l.frame_owner) == l.owned_by_generator;
    const std::intptr_t index =
        (static_cast<std::intptr_t>(instruction) - static_cast<std::intptr_t>(code.instructions)) / 2;
    // Incomplete (being set up): not shown, but its entry mark still ends a run.
    const bool incomplete = !generator && index < code.first_traceable;
    if (!incomplete) {
      if (index < 0 || index >= static_cast<std::intptr_t>(code.units)) return false;
      const std::uintptr_t value = intern_python_frame(code, static_cast<std::uint32_t>(index));
      if (value == 0) return false;
      chain->frames[chain->count++] = value;
    }
    if (read_at<std::uint8_t>(frame + l.frame_is_entry) != 0) chain->run_end[chain->runs++] = chain->count;
  }
  // The outermost frame is always an entry: a chain that ends otherwise is not one.
  return chain->runs > 0 && chain->run_end[chain->runs - 1] == chain->count;
}

}  // namespace

std::uint32_t merge_python_frames(const PythonRuntime& py, const std::uintptr_t* native, std::uint32_t depth,
                                  std::uint32_t keep_native, std::uintptr_t* out,
                                  std::uint32_t max) noexcept {
  Chain chain;
  if (!read_chain(py, &chain)) return 0;
  std::uint32_t n = 0, run = 0;
  const auto put = [&](std::uintptr_t frame) {
    if (n < max) out[n++] = frame;
  };
  const auto put_run = [&](std::uint32_t k) {
    for (std::uint32_t i = k == 0 ? 0 : chain.run_end[k - 1]; i < chain.run_end[k]; ++i) put(chain.frames[i]);
  };
  for (std::uint32_t i = 0; i < depth; ++i) {
    if (native[i] - py.eval_begin >= py.eval_end - py.eval_begin) {
      if (i < keep_native) put(native[i]);
      continue;
    }
    if (run < chain.runs) put_run(run++);
    else if (!chain.cut) return 0;  // an evaluator frame without a run
  }
  // A run without its evaluator frame: an evaluator frame not recognised (one in a `.cold`
  // part of the evaluator), or one entered or left between the walk and the chain's read.
  if (!chain.cut && run != chain.runs) return 0;
  while (run < chain.runs) put_run(run++);  // the chain was cut: its outer runs, in order
  return n;
}

}  // namespace liveheap::engine
