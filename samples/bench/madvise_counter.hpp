// Counts the madvise calls that reach the global symbol `madvise` (a preloaded library's,
// numpy's), for the overhead benchmark's madvise-per-operation columns. glibc's malloc
// calls its internal madvise, so glibc's own calls are not counted.
// Thread-safety: the counter is atomic.
#pragma once

extern "C" {
// madvise calls counted since the process started.
long liveheap_bench_madvise_calls();
}
