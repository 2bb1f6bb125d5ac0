// The start-up row of the overhead benchmark (`--only startup`): what the preload library
// adds to every exec. Short programs (/bin/true, and real ones when installed: git, python3,
// node, sqlite3) run many times each, bare and under the preload library with
// LIVEHEAP_MODE=off, sampled without LIVEHEAP_ADDR, and sampled with LIVEHEAP_ADDR on a free
// port; rounds interleaved, medians per exec, printed as a table with what each variant
// adds over bare, judged against docs/performance.md's start-up targets. Those were set on
// a machine whose bare /bin/true takes 0.55 ms: what is judged is the added time scaled by
// this machine's bare /bin/true against that (an exec's cost, and what the preload library
// adds to it, are mostly mapping, relocation and page faults, which scale together).
// Thread-safety: none needed; the driver is single-threaded.
#pragma once

#include <string>

#include "bench_targets.hpp"

namespace bench {

// Runs and prints the row; missing programs are skipped with a note. ~30 s.
void run_startup_row(const std::string& preload_library, int rounds, Clock judged_by);

}  // namespace bench
