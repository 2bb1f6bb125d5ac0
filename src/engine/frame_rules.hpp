// Frame rules: how to step from one x86-64 stack frame to its caller's, read from the
// DWARF call frame information (.eh_frame) the compiler emits for every function.
// Thread-safety: find_frame_rule is lock-free, allocation-free and reentrant (callable
// from inside malloc on any thread).
#pragma once

#include <cstdint>

namespace liveheap::engine {

// The unwind rule at one code address, in the form nearly every compiled frame takes:
//   CFA        = (cfa_from_rbp ? rbp : rsp) + cfa_offset
//   return to    the address stored at CFA - 8
//   caller rsp = CFA
//   caller rbp = the value stored at CFA + rbp_slot, or rbp unchanged when rbp_slot is 0
// Anything else (signal frames, PLT stubs, CFA expressions, code without CFI) is
// `unsupported`, and the stack is walked by libunwind instead.
struct FrameRule {
  enum class Kind : std::uint8_t {
    none = 0,       // no rule (an empty cache slot)
    step = 1,       // the form above
    outermost = 2,  // the return address is undefined: the stack ends here (_start, clone3)
    unsupported = 3,
  };
  Kind kind = Kind::none;
  bool cfa_from_rbp = false;
  std::int16_t rbp_slot = 0;
  std::int32_t cfa_offset = 0;

  // One word, so a cache slot publishes a rule with a single store; laid out so that each
  // field is read from the word with one instruction (cfa_offset in the low half).
  std::uint64_t pack() const noexcept {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(cfa_offset)) |
           static_cast<std::uint64_t>(static_cast<std::uint16_t>(rbp_slot)) << 32 |
           static_cast<std::uint64_t>(cfa_from_rbp) << 48 | static_cast<std::uint64_t>(kind) << 56;
  }
  // The fields of a packed rule, read in place. The stack walk's hot loop uses these rather
  // than unpack(): a FrameRule's bool goes through a byte register, two more cycles per
  // frame on the walk's dependency chain (28 frames: 93 -> 117 ns).
  static Kind kind_of(std::uint64_t bits) noexcept { return static_cast<Kind>(bits >> 56); }
  static bool cfa_from_rbp_of(std::uint64_t bits) noexcept { return (bits >> 48 & 1) != 0; }
  static std::int16_t rbp_slot_of(std::uint64_t bits) noexcept {
    return static_cast<std::int16_t>(bits >> 32);
  }
  static std::int32_t cfa_offset_of(std::uint64_t bits) noexcept { return static_cast<std::int32_t>(bits); }
  static FrameRule unpack(std::uint64_t bits) noexcept {
    return {kind_of(bits), cfa_from_rbp_of(bits), rbp_slot_of(bits), cfa_offset_of(bits)};
  }
  friend bool operator==(const FrameRule&, const FrameRule&) = default;
};

// The rule in effect at `pc`, from the CFI of the loaded object that contains it (found
// with glibc's _dl_find_object and the object's .eh_frame_hdr search table). For a return
// address pass the address minus one: the row that matters is the call's.
FrameRule find_frame_rule(std::uintptr_t pc) noexcept;

}  // namespace liveheap::engine
