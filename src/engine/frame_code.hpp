// A stack's frames as its record keeps them: each return address as its signed step from
// the frame before it (the first from 0). A stack's frames sit in a few modules, near each
// other: a frame within a module takes 1-3 bytes, one that crosses to another module 6-7,
// where every frame took 8.
//
// Read fast, since a lookup compares a walk's frames with a record's: a frame takes L bytes
// (1 to 7, or 9), its last byte's top 3 bits say which (L - 1; 7: 9 bytes), the step in
// the 8L - 3 bits below them, and frames are laid out backwards, the first frame's bytes
// last. A reader loads the 8 bytes that end where a frame ends and has the step with two
// shifts, and one branch that a 9-byte frame (a step of 2^52 or more: into or out of the
// Python frames, whose top bit is set) takes. A load reaches up to 7 bytes before a frame:
// whoever keeps code must keep 8 readable bytes before it that no one writes while it is
// read (a record keeps its hash and code size there).
#pragma once

#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

namespace frame_code_detail {

inline std::int64_t step(std::uintptr_t previous, std::uintptr_t frame) noexcept {
  return static_cast<std::int64_t>(frame - previous);
}

// The bytes of one frame whose step is `step`: 1 to 7 for steps of up to 53 bits with the
// sign, else 9.
inline std::size_t frame_bytes(std::int64_t step) noexcept {
  const auto magnitude = static_cast<std::uint64_t>(step ^ (step >> 63));
  const unsigned bits = 1 + (magnitude == 0 ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(magnitude)));
  return bits <= 53 ? (bits + 3 + 7) / 8 : 9;
}

inline std::uint64_t load8(const std::uint8_t* p) noexcept {
  std::uint64_t word;
  __builtin_memcpy(&word, p, 8);  // little-endian
  return word;
}

}  // namespace frame_code_detail

// The bytes encode_frames() writes for these frames.
inline std::size_t coded_bytes(const std::uintptr_t* frames, std::uint32_t depth) noexcept {
  std::size_t bytes = 0;
  std::uintptr_t previous = 0;
  for (std::uint32_t i = 0; i < depth; ++i) {
    bytes += frame_code_detail::frame_bytes(frame_code_detail::step(previous, frames[i]));
    previous = frames[i];
  }
  return bytes;
}

// Codes `depth` frames into the coded_bytes() that end at `end`.
inline void encode_frames(const std::uintptr_t* frames, std::uint32_t depth, std::uint8_t* end) noexcept {
  std::uintptr_t previous = 0;
  for (std::uint32_t i = 0; i < depth; ++i) {
    const std::int64_t step = frame_code_detail::step(previous, frames[i]);
    previous = frames[i];
    const std::size_t bytes = frame_code_detail::frame_bytes(step);
    end -= bytes;
    if (bytes == 9) {
      __builtin_memcpy(end, &step, 8);
      end[8] = 7 << 5;
      continue;
    }
    const std::uint64_t payload =
        static_cast<std::uint64_t>(step) & ((std::uint64_t{1} << (8 * bytes - 3)) - 1);
    const std::uint64_t word = payload | std::uint64_t{bytes - 1} << (8 * bytes - 3);
    __builtin_memcpy(end, &word, bytes);
  }
}

// Reads the frame that ends at `end` and follows *frame (the frame before it; 0 before the
// first) into *frame; returns where the next frame ends.
inline const std::uint8_t* decode_frame(const std::uint8_t* end, std::uintptr_t* frame) noexcept {
  const std::uint64_t word = frame_code_detail::load8(end - 8);
  const unsigned tag = static_cast<unsigned>(word >> 61);
  std::uint64_t step;
  if (tag == 7) [[unlikely]] {
    step = frame_code_detail::load8(end - 9);
    end -= 9;
  } else {
    // The payload's top bit to the word's, then back down with the sign.
    step = static_cast<std::uint64_t>(static_cast<std::int64_t>(word << 3) >> (59 - 8 * tag));
    end -= tag + 1;
  }
  *frame += step;
  return end;
}

// Decodes the `depth` frames of the code that ends at `end` into `out`.
inline void decode_frames(const std::uint8_t* end, std::uint32_t depth, std::uintptr_t* out) noexcept {
  std::uintptr_t frame = 0;
  for (std::uint32_t i = 0; i < depth; ++i) {
    end = decode_frame(end, &frame);
    out[i] = frame;
  }
}

// True when the code that ends at `end` holds exactly these `depth` frames.
inline bool same_frames(const std::uint8_t* end, const std::uintptr_t* frames, std::uint32_t depth) noexcept {
  std::uintptr_t frame = 0;
  for (std::uint32_t i = 0; i < depth; ++i) {
    end = decode_frame(end, &frame);
    if (frame != frames[i]) return false;
  }
  return true;
}

}  // namespace liveheap::engine
