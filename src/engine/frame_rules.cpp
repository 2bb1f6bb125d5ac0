// Reads .eh_frame_hdr / .eh_frame (the LSB's exception frame format, DWARF CFI) just far
// enough to run one FDE's call frame program up to a pc and reduce the row to a FrameRule.
// Everything is bounds-checked against the lengths the data declares; any surprise gives
// `unsupported`, never a guess: a wrong rule would walk the stack into garbage.
#include "frame_rules.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>

namespace liveheap::engine {
namespace {

using Kind = FrameRule::Kind;

// x86-64 DWARF register numbers.
constexpr unsigned kRbp = 6;
constexpr unsigned kRsp = 7;
constexpr unsigned kReturnAddress = 16;

// Pointer encodings (DW_EH_PE_*): the value's format in the low nibble, what it is
// relative to in bits 4-6, bit 7 an indirection.
constexpr std::uint8_t kEncOmit = 0xff;
constexpr std::uint8_t kEncIndirect = 0x80;
constexpr std::uint8_t kEncPcrel = 0x10;
constexpr std::uint8_t kEncDatarel = 0x30;
constexpr std::uint8_t kEncSdata4Datarel = 0x3b;  // the .eh_frame_hdr table GNU ld writes
// x86-64 has no datarel base in .eh_frame itself (glibc has no dlfo_eh_dbase there).
constexpr std::uintptr_t kNoDataBase = 0;

// A cursor over [p, end): every read checks the bounds and sets ok=false past them.
struct Reader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;

  bool has(std::size_t n) {
    if (ok && static_cast<std::size_t>(end - p) >= n) return true;
    ok = false;
    return false;
  }
  template <typename T>
  T fixed() {
    T v{};
    if (!has(sizeof(T))) return v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  std::uint8_t u8() { return fixed<std::uint8_t>(); }
  std::uint64_t uleb() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; has(1); shift += 7) {
      const std::uint8_t b = *p++;
      if (shift < 64) v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return 0;
  }
  std::int64_t sleb() {
    std::int64_t v = 0;
    unsigned shift = 0;
    for (; has(1);) {
      const std::uint8_t b = *p++;
      if (shift < 64) v |= static_cast<std::int64_t>(static_cast<std::uint64_t>(b & 0x7f) << shift);
      shift += 7;
      if ((b & 0x80) == 0) {
        if (shift < 64 && (b & 0x40)) v |= -(std::int64_t{1} << shift);
        return v;
      }
    }
    return 0;
  }
  void skip(std::uint64_t n) {
    if (has(n)) p += n;
  }
  // A pointer in `encoding`; `data_base` serves datarel (kNoDataBase: none). Indirect
  // pointers are read, not followed (only personality routines use them; skipped).
  std::uintptr_t encoded(std::uint8_t encoding, std::uintptr_t data_base) {
    const auto field = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t v = 0;
    switch (encoding & 0x0f) {
      case 0x00: v = fixed<std::uint64_t>(); break;  // absptr
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed<std::uint16_t>(); break;
      case 0x03: v = fixed<std::uint32_t>(); break;
      case 0x04: v = fixed<std::uint64_t>(); break;
      case 0x09: v = static_cast<std::uintptr_t>(sleb()); break;
      case 0x0a: v = static_cast<std::uintptr_t>(fixed<std::int16_t>()); break;
      case 0x0b: v = static_cast<std::uintptr_t>(fixed<std::int32_t>()); break;
      case 0x0c: v = static_cast<std::uintptr_t>(fixed<std::int64_t>()); break;
      default: ok = false; return 0;
    }
    switch (encoding & 0x70) {
      case 0x00: break;
      case kEncPcrel: v += field; break;
      case kEncDatarel:  // only .eh_frame_hdr's table uses it on x86-64 (relative to the hdr)
        if (data_base == kNoDataBase) ok = false;
        v += data_base;
        break;
      default: ok = false; break;  // textrel, funcrel, aligned: not used on x86-64 Linux
    }
    return v;
  }
};

// One entry of .eh_frame (a CIE or an FDE): its content after the length field.
bool entry_at(const std::uint8_t* at, Reader* entry) {
  Reader r{at, at + 12};
  std::uint64_t length = r.fixed<std::uint32_t>();
  if (length == 0xffffffffu) length = r.fixed<std::uint64_t>();
  if (!r.ok || length == 0) return false;
  *entry = Reader{r.p, r.p + length};
  return true;
}

struct Cie {
  std::uint64_t code_align = 1;
  std::int64_t data_align = 1;
  std::uint64_t return_register = kReturnAddress;
  std::uint8_t fde_encoding = 0;  // absptr unless 'R' says otherwise
  bool has_augmentation_data = false;
  bool signal_frame = false;
  Reader program{nullptr, nullptr};  // initial instructions
};

bool parse_cie(const std::uint8_t* at, Cie* cie) {
  Reader r{nullptr, nullptr};
  if (!entry_at(at, &r)) return false;
  if (r.fixed<std::uint32_t>() != 0) return false;  // CIE id is 0 in .eh_frame
  const std::uint8_t version = r.u8();
  if (version != 1 && version != 3) return false;
  const auto* augmentation = reinterpret_cast<const char*>(r.p);
  const std::size_t aug_length = strnlen(augmentation, static_cast<std::size_t>(r.end - r.p));
  r.skip(aug_length + 1);
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  cie->return_register = version == 1 ? r.u8() : r.uleb();
  if (aug_length > 0 && augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const std::uint64_t length = r.uleb();
    Reader data{r.p, r.p + length};
    r.skip(length);
    for (std::size_t i = 1; i < aug_length; ++i) {
      switch (augmentation[i]) {
        case 'R': cie->fde_encoding = data.u8(); break;
        case 'L': data.u8(); break;  // LSDA encoding: FDEs carry it in their own data
        case 'P': {
          const std::uint8_t encoding = data.u8();
          data.encoded(encoding & ~kEncIndirect, kNoDataBase);  // personality: skipped
          break;
        }
        case 'S': cie->signal_frame = true; break;
        case 'B':
        case 'G': break;  // no data; not produced on x86-64
        default: return false;
      }
    }
    if (!data.ok) return false;
  } else if (aug_length > 0) {
    return false;  // "eh" and other pre-'z' augmentations: not readable safely
  }
  cie->program = Reader{r.p, r.end};
  return r.ok;
}

// The FDE covering `pc`, located through .eh_frame_hdr's sorted table.
const std::uint8_t* find_fde(const std::uint8_t* hdr, std::uintptr_t pc) {
  Reader r{hdr, hdr + 4};
  const std::uint8_t version = r.u8();
  const std::uint8_t frame_ptr_encoding = r.u8();
  const std::uint8_t count_encoding = r.u8();
  const std::uint8_t table_encoding = r.u8();
  if (!r.ok || version != 1 || table_encoding != kEncSdata4Datarel || frame_ptr_encoding == kEncOmit ||
      count_encoding == kEncOmit)
    return nullptr;
  const auto base = reinterpret_cast<std::uintptr_t>(hdr);
  r.end = hdr + 4 + 16;  // two pointers at most 8 bytes each (no leb128 here in practice)
  r.encoded(frame_ptr_encoding, base);
  const std::uintptr_t count = r.encoded(count_encoding, base);
  if (!r.ok || count == 0) return nullptr;
  const auto* table = reinterpret_cast<const std::int32_t*>(r.p);  // (start, fde) pairs
  // The last entry whose start is <= pc.
  std::size_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (base + static_cast<std::intptr_t>(table[2 * mid]) <= pc) lo = mid;
    else hi = mid;
  }
  if (base + static_cast<std::intptr_t>(table[2 * lo]) > pc) return nullptr;
  return reinterpret_cast<const std::uint8_t*>(base + static_cast<std::intptr_t>(table[2 * lo + 1]));
}

// The rules the program tracks; other registers' rules are parsed and ignored.
struct RegisterRule {
  enum class How : std::uint8_t { same, undefined, at_cfa_offset, other };
  How how = How::same;
  std::int64_t offset = 0;
};
struct Row {
  unsigned cfa_register = kRsp;
  std::int64_t cfa_offset = 0;
  bool cfa_is_expression = false;
  RegisterRule rbp;
  RegisterRule ra;
};

template <typename R>  // Row or const Row
auto* tracked(R* row, std::uint64_t reg, const Cie& cie) {
  decltype(&row->rbp) none = nullptr;
  if (reg == kRbp) return &row->rbp;
  if (reg == cie.return_register) return &row->ra;
  return none;
}

// Runs a call frame program until the row for `target` is complete. `initial` is the CIE's
// row (for DW_CFA_restore); null while running the CIE's own instructions.
bool run_program(Reader r, const Cie& cie, std::uintptr_t loc, std::uintptr_t target, const Row* initial,
                 Row* row) {
  constexpr int kMaxRemembered = 16;
  Row remembered[kMaxRemembered];
  int depth = 0;
  auto set = [&](std::uint64_t reg, RegisterRule rule) {
    if (RegisterRule* t = tracked(row, reg, cie)) *t = rule;
  };
  auto restore = [&](std::uint64_t reg) {
    if (initial == nullptr) return false;
    if (RegisterRule* t = tracked(row, reg, cie)) *t = *tracked(initial, reg, cie);
    return true;
  };
  auto advance = [&](std::uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= target;
  };
  const auto offset_rule = [](std::int64_t offset) {
    return RegisterRule{RegisterRule::How::at_cfa_offset, offset};
  };
  const RegisterRule other{RegisterRule::How::other, 0};

  while (r.ok && r.p < r.end) {
    const std::uint8_t op = r.u8();
    const std::uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        if (!advance(low)) return true;
        continue;
      case 2:  // DW_CFA_offset
        set(low, offset_rule(static_cast<std::int64_t>(r.uleb()) * cie.data_align));
        continue;
      case 3:  // DW_CFA_restore
        if (!restore(low)) return false;
        continue;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: {       // set_loc
        const std::uintptr_t to = r.encoded(cie.fde_encoding, kNoDataBase);
        if (to > target) return true;
        loc = to;
        break;
      }
      case 0x02:
        if (!advance(r.u8())) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<std::uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<std::uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        const std::uint64_t reg = r.uleb();
        set(reg, offset_rule(static_cast<std::int64_t>(r.uleb()) * cie.data_align));
        break;
      }
      case 0x06:
        if (!restore(r.uleb())) return false;
        break;  // restore_extended
      case 0x07: set(r.uleb(), {RegisterRule::How::undefined, 0}); break;
      case 0x08: set(r.uleb(), {RegisterRule::How::same, 0}); break;
      case 0x09: {  // register: reg1 saved in reg2
        const std::uint64_t reg = r.uleb();
        r.uleb();
        set(reg, other);
        break;
      }
      case 0x0a:  // remember_state
        if (depth == kMaxRemembered) return false;
        remembered[depth++] = *row;
        break;
      case 0x0b:  // restore_state: the CFA rule too, as libgcc and libunwind do (GCC's
                  // epilogues rely on it)
        if (depth == 0) return false;
        *row = remembered[--depth];
        break;
      case 0x0c:  // def_cfa
        row->cfa_register = static_cast<unsigned>(r.uleb());
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        row->cfa_is_expression = false;
        break;
      case 0x0d:  // def_cfa_register
        row->cfa_register = static_cast<unsigned>(r.uleb());
        break;
      case 0x0e:  // def_cfa_offset
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0f:  // def_cfa_expression
        r.skip(r.uleb());
        row->cfa_is_expression = true;
        break;
      case 0x10:
      case 0x16: {  // expression, val_expression
        const std::uint64_t reg = r.uleb();
        r.skip(r.uleb());
        set(reg, other);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const std::uint64_t reg = r.uleb();
        set(reg, offset_rule(r.sleb() * cie.data_align));
        break;
      }
      case 0x12:  // def_cfa_sf
        row->cfa_register = static_cast<unsigned>(r.uleb());
        row->cfa_offset = r.sleb() * cie.data_align;
        row->cfa_is_expression = false;
        break;
      case 0x13: row->cfa_offset = r.sleb() * cie.data_align; break;  // def_cfa_offset_sf
      case 0x14:
      case 0x15: {  // val_offset, val_offset_sf
        const std::uint64_t reg = r.uleb();
        if (op == 0x14) r.uleb();
        else r.sleb();
        set(reg, other);
        break;
      }
      case 0x2e: r.uleb(); break;  // GNU_args_size
      case 0x2f: {                 // GNU_negative_offset_extended
        const std::uint64_t reg = r.uleb();
        set(reg, offset_rule(-static_cast<std::int64_t>(r.uleb()) * cie.data_align));
        break;
      }
      default: return false;  // an opcode we do not know: its operands cannot be skipped
    }
  }
  return r.ok;
}

FrameRule reduce(const Row& row, const Cie& cie) {
  FrameRule rule;
  rule.kind = Kind::unsupported;
  if (cie.signal_frame) return rule;
  if (row.ra.how == RegisterRule::How::undefined) {
    rule.kind = Kind::outermost;
    return rule;
  }
  if (row.cfa_is_expression || (row.cfa_register != kRsp && row.cfa_register != kRbp)) return rule;
  if (row.cfa_offset < 8 || row.cfa_offset > INT32_MAX) return rule;
  if (row.ra.how != RegisterRule::How::at_cfa_offset || row.ra.offset != -8) return rule;
  switch (row.rbp.how) {
    case RegisterRule::How::same: rule.rbp_slot = 0; break;
    case RegisterRule::How::at_cfa_offset:
      if (row.rbp.offset == 0 || row.rbp.offset < INT16_MIN || row.rbp.offset > INT16_MAX) return rule;
      rule.rbp_slot = static_cast<std::int16_t>(row.rbp.offset);
      break;
    default: return rule;
  }
  rule.kind = Kind::step;
  rule.cfa_from_rbp = row.cfa_register == kRbp;
  rule.cfa_offset = static_cast<std::int32_t>(row.cfa_offset);
  return rule;
}

}  // namespace

FrameRule find_frame_rule(std::uintptr_t pc) noexcept {
  FrameRule unsupported;
  unsupported.kind = Kind::unsupported;
  dl_find_object object;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &object) != 0 || object.dlfo_eh_frame == nullptr)
    return unsupported;
  const std::uint8_t* fde_at = find_fde(static_cast<const std::uint8_t*>(object.dlfo_eh_frame), pc);
  if (fde_at == nullptr) return unsupported;

  Reader fde{nullptr, nullptr};
  if (!entry_at(fde_at, &fde)) return unsupported;
  const std::uint8_t* cie_pointer_field = fde.p;
  const std::uint32_t cie_offset = fde.fixed<std::uint32_t>();
  if (!fde.ok || cie_offset == 0) return unsupported;  // 0 would make this entry a CIE
  Cie cie;
  if (!parse_cie(cie_pointer_field - cie_offset, &cie)) return unsupported;
  const std::uintptr_t pc_begin = fde.encoded(cie.fde_encoding, kNoDataBase);
  const std::uintptr_t pc_range = fde.encoded(cie.fde_encoding & 0x0f, kNoDataBase);
  if (!fde.ok || pc < pc_begin || pc - pc_begin >= pc_range) return unsupported;
  if (cie.has_augmentation_data) fde.skip(fde.uleb());
  if (!fde.ok) return unsupported;

  Row initial;
  if (!run_program(cie.program, cie, pc_begin, UINTPTR_MAX, nullptr, &initial)) return unsupported;
  Row row = initial;
  if (!run_program(fde, cie, pc_begin, pc, &initial, &row)) return unsupported;
  return reduce(row, cie);
}

}  // namespace liveheap::engine
