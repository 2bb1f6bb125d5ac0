// liveheap's own descriptors (src/boot/own_descriptors.hpp) and the hooks that keep them
// (src/boot/descriptor_hooks.cpp), in this process: this binary is linked as the libraries
// are, with the hooks and the --wrap of liveheap's own calls. The test's descriptors come
// from openat (not wrapped) and fcntl, so they are the "program's" until a test makes one
// liveheap's; numbers from 3000 up are this file's scratch.
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "own_descriptors.hpp"
#include "gtest/gtest.h"

// With --wrap=close, this binary's calls to close are liveheap's own (they close for real);
// __real_close is the hook a program's call reaches.
extern "C" int __real_close(int fd);

namespace {

using namespace liveheap::boot;

constexpr int kScratch = 3000;

// An open descriptor no hook knows of, at the lowest free number (`at` = 0) or at `at`.
int program_descriptor(int at = 0) {
  const int fd = ::openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
  if (at == 0 || fd < 0) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, at);
  close_own_descriptor(fd);
  return moved;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Where liveheap moves its descriptors under this process's limit.
int expected_base() {
  rlimit limit{};
  EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t cap = limit.rlim_cur < 1024 ? limit.rlim_cur : 1024;
  return static_cast<int>(cap - cap / 8);
}

TEST(OwnDescriptors, MadeUnderASmallNumberTheyMoveAboveTheProgramsNumbers) {
  const int low = program_descriptor();
  ASSERT_GE(low, 0);
  ASSERT_LT(low, expected_base());
  const int fd = own_descriptor(low);
  EXPECT_GE(fd, expected_base());
  EXPECT_TRUE(is_own_descriptor(fd));
  EXPECT_FALSE(is_own_descriptor(low));
  EXPECT_FALSE(is_open(low)) << "the first number is the program's again";
  EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << "close-on-exec as it was";
  EXPECT_EQ(close_own_descriptor(fd), 0);
  EXPECT_FALSE(is_own_descriptor(fd));
  EXPECT_FALSE(is_open(fd));
}

TEST(OwnDescriptors, AProgramsCloseLeavesThemOpenAsIfItHadClosedThem) {
  const int fd = own_descriptor(program_descriptor());
  ASSERT_TRUE(is_own_descriptor(fd));
  EXPECT_EQ(__real_close(fd), 0);
  EXPECT_TRUE(is_open(fd));
  const int other = program_descriptor();
  EXPECT_EQ(__real_close(other), 0) << "any other number closes as it does without liveheap";
  EXPECT_FALSE(is_open(other));
  EXPECT_EQ(__real_close(other), -1);
  EXPECT_EQ(errno, EBADF);
  close_own_descriptor(fd);
}

TEST(OwnDescriptors, CloseRangeAndClosefromCloseEverythingButTheirNumbers) {
  for (const bool use_closefrom : {false, true}) {
    int fds[6];
    for (int i = 0; i < 6; ++i) fds[i] = program_descriptor(kScratch + i);
    ASSERT_EQ(fds[5], kScratch + 5);
    own_descriptor(fds[0]);  // above the base already: marked where it is
    own_descriptor(fds[3]);
    ASSERT_TRUE(is_own_descriptor(kScratch) && is_own_descriptor(kScratch + 3));
    if (use_closefrom) ::closefrom(kScratch);
    else EXPECT_EQ(::close_range(kScratch, kScratch + 5, 0), 0);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(is_open(kScratch + i), i == 0 || i == 3) << i << " " << use_closefrom;
    // Only marking close-on-exec (liveheap's are already), the call passes as it is.
    EXPECT_EQ(::close_range(kScratch, kScratch + 5, CLOSE_RANGE_CLOEXEC), 0);
    EXPECT_TRUE(is_open(kScratch));
    close_own_descriptor(kScratch);
    close_own_descriptor(kScratch + 3);
  }
  EXPECT_EQ(::close_range(5, 4, 0), -1) << "a bad range fails as it does without liveheap";
  EXPECT_EQ(errno, EINVAL);
}

TEST(OwnDescriptors, ADup2OntoTheirNumberMakesItTheProgramsFromThen) {
  const int fd = own_descriptor(program_descriptor(kScratch));
  const int mine = program_descriptor();
  ASSERT_TRUE(is_own_descriptor(fd));
  EXPECT_EQ(::dup2(mine, fd), fd);
  EXPECT_FALSE(is_own_descriptor(fd));
  EXPECT_EQ(__real_close(fd), 0);
  EXPECT_FALSE(is_open(fd));
  const int again = own_descriptor(program_descriptor(kScratch));
  EXPECT_EQ(::dup3(mine, again, O_CLOEXEC), again);
  EXPECT_FALSE(is_own_descriptor(again));
  close_own_descriptor(again);
  close_own_descriptor(mine);
}

TEST(OwnDescriptors, AForkedChildClosesTheParentsCopiesAsItLikes) {
  const int fd = own_descriptor(program_descriptor());
  ASSERT_TRUE(is_own_descriptor(fd));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(is_own_descriptor(fd) ? 1 : __real_close(fd) == 0 && !is_open(fd) ? 0 : 2);
  int status = -1;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(is_own_descriptor(fd)) << "the parent's marks are its own";
  EXPECT_TRUE(is_open(fd));
  close_own_descriptor(fd);
}

}  // namespace
