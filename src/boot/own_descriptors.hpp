// liveheap's own descriptors, kept out of the program's way. liveheap shares the
// descriptor table with a program that takes every number for its own: daemons close
// every descriptor as they start (close loops, close_range, closefrom), shells make a
// number theirs with dup2 (`exec 3>file`, a configure script's `exec 5>>config.log`). A
// number liveheap's listener, sessions or reactor held would then be the program's while
// liveheap's threads still use it: epoll_ctl on the program's epoll set, a report sent
// into the program's connection, the port unserved. So every descriptor liveheap makes
//  - moves above the numbers programs use when it is made: at or above 7/8 of the soft
//    RLIMIT_NOFILE, counted up to 1024 (896 under the usual 1024), where the program's
//    lowest-free numbering does not reach and shells' dup2 targets are not;
//  - is marked: the program's close, close_range and closefrom leave a marked number open
//    (descriptor_hooks.cpp), as Valgrind keeps its own; it is close-on-exec, so an exec
//    still drops it, and a forked child forgets the marks (the parent's copies are the
//    child's to close).
// A program's dup2 or dup3 onto a marked number wins: it asked for that number.
// Not covered: a descriptor closed by a raw system call (syscall(SYS_close, ...)), and the
// instant between the kernel handing liveheap a number and liveheap marking it.
// Thread-safety: lock-free; any thread, and signal handlers (the hooks).
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// Numbers from 0 to kMaxOwnDescriptor - 1 can be marked; a descriptor above (a program
// with thousands open) is liveheap's unmarked.
inline constexpr int kMaxOwnDescriptor = 4096;

// Takes `fd`, just made by liveheap, as liveheap's: moved high when it can be (its first
// number closed) and marked. The descriptor to use from now on; fd itself when it was not
// moved or is negative (a failed call's result passes through). Close-on-exec and errno
// are kept as they were.
LIVEHEAP_SHARED int own_descriptor(int fd) noexcept;

// Closes one of liveheap's descriptors for real, then unmarks it; close()'s result and errno.
LIVEHEAP_SHARED int close_own_descriptor(int fd) noexcept;

// Whether `fd` is marked as liveheap's.
LIVEHEAP_SHARED bool is_own_descriptor(int fd) noexcept;

// Unmarks `fd`: the number is the program's now (it made it its own with dup2, or closed
// liveheap's with a raw system call and opened its own).
LIVEHEAP_SHARED void disown_descriptor(int fd) noexcept;

// The lowest marked number at or above `from` and at most `to`, or -1.
int next_own_descriptor(unsigned from, unsigned to) noexcept;

// In a forked child, before anything closes: no number is marked any more.
void forget_own_descriptors() noexcept;

// The pid of the process that marked its descriptors (a vfork child, which shares the
// parent's memory but not its table, never changes the marks).
int own_descriptors_pid() noexcept;

}  // namespace liveheap::boot
