// Sampled blocks in glibc's heap: placed 64 bytes past a page boundary with their header
// before them; glibc's own blocks at that place are not taken for them, nor is a copy of a
// header; a freed one's hole taken by the next of its size; zeroed where asked, whatever
// glibc's memory held; grown and shrunk through glibc's realloc with their content; made
// glibc's own again; freed twice, caught by glibc.
#include <malloc.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "hosted_samples.hpp"
#include "next_allocator.hpp"

namespace liveheap::engine {
namespace {

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

class Hosted : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!next_is_glibc()) GTEST_SKIP() << "blocks are hosted only by glibc's malloc";
    set_hosting(true);
  }
};

TEST_F(Hosted, ABlockSitsPastAPageBoundaryWithItsHeaderAndGoesBackToGlibc) {
  const std::int64_t before = hosted_bytes();
  for (const std::size_t size : {std::size_t{24}, std::size_t{5000}, std::size_t{3} << 20}) {
    auto* p = static_cast<unsigned char*>(hosted_allocate(size, size, false));
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(address(p) % 4096, 64u) << size;
    EXPECT_TRUE(may_be_sampled(p)) << size;
    const SampleHeader* h = hosted_header(p);
    ASSERT_NE(h, nullptr) << size;
    EXPECT_EQ(address(h), address(p) - 64) << size;
    EXPECT_EQ(h->size, size);
    EXPECT_EQ(h->usable, size);
    // The chunk glibc gave holds the whole block.
    EXPECT_LE(address(p) + size, h->run + g_next.malloc_usable_size(reinterpret_cast<void*>(h->run))) << size;
    EXPECT_GE(hosted_bytes(), before + static_cast<std::int64_t>(size + 64)) << size;
    std::memset(p, 0x5a, size);
    hosted_release(p);
    EXPECT_EQ(hosted_bytes(), before) << size;
  }
}

TEST_F(Hosted, GlibcsOwnBlocksAtTheSamePlaceAndCopiesOfAHeaderAreNotHosted) {
  // glibc's blocks of 64 bytes past a boundary: one in 256 of a heap's places.
  std::vector<void*> blocks;
  void* found = nullptr;
  for (int i = 0; i < 20000 && found == nullptr; ++i) {
    void* b = g_next.malloc(48 + 16 * (i % 7));
    blocks.push_back(b);
    if (address(b) % 4096 == 64) found = b;
  }
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(may_be_sampled(found));
  EXPECT_EQ(hosted_header(found), nullptr);
  // A block's header copied, as it stands, in front of another such place.
  auto* p = static_cast<unsigned char*>(hosted_allocate(100, 100, false));
  ASSERT_NE(p, nullptr);
  auto* other = static_cast<unsigned char*>(g_next.memalign(4096, 8192));
  std::memcpy(other + 4096, p - 64, 64);  // before other + 4096 + 64
  EXPECT_EQ(hosted_header(other + 4096 + 64), nullptr);
  EXPECT_NE(hosted_header(p), nullptr);
  // Page-aligned blocks pass the first test, never the second.
  EXPECT_TRUE(may_be_sampled(other));
  EXPECT_EQ(hosted_header(other), nullptr);
  g_next.free(other);
  hosted_release(p);
  for (void* b : blocks) g_next.free(b);
}

// A freed sample leaves glibc a hole its successor of the same size fits, as a program's
// block does: one chunk goes round, where samples split chunks (memalign) and each
// successor went elsewhere (a figure loop's heap grew by MiBs in one process of twelve).
TEST_F(Hosted, ASamplesHoleIsTakenByTheNextSampleOfItsSize) {
  // Below glibc's mmap threshold (128 KiB at first): blocks of its heap.
  for (const std::size_t size : {std::size_t{5000}, std::size_t{40000}, std::size_t{100000}}) {
    void* p = hosted_allocate(size, size, false);
    ASSERT_NE(p, nullptr) << size;
    // The program's blocks after it: its hole is not the heap's top.
    void* after = g_next.malloc(200);
    hosted_release(p);
    void* q = hosted_allocate(size, size, false);
    EXPECT_EQ(q, p) << size;
    hosted_release(q);
    g_next.free(after);
  }
}

TEST_F(Hosted, ZeroedBlocksReadZeroWhereGlibcsMemoryWasWritten) {
  for (const std::size_t size :
       {std::size_t{3000}, std::size_t{40000}, std::size_t{300000}, std::size_t{2} << 20}) {
    // glibc's memory of about that size, written and freed: a chunk the next may reuse.
    for (int i = 0; i < 2; ++i) {
      void* dirty = g_next.malloc(size + 4096 + 64);
      std::memset(dirty, 0xff, size + 4096 + 64);
      g_next.free(dirty);
    }
    auto* z = static_cast<unsigned char*>(hosted_allocate(size, size, true));
    ASSERT_NE(z, nullptr) << size;
    for (std::size_t b = 0; b < size; b += 251) ASSERT_EQ(z[b], 0) << size << " " << b;
    EXPECT_EQ(z[size - 1], 0) << size;
    std::memset(z, 0xee, size);
    hosted_release(z);
  }
}

TEST_F(Hosted, AGrownOrShrunkBlockKeepsItsContentPastAPageBoundary) {
  auto* p = static_cast<unsigned char*>(hosted_allocate(100000, 100000, false));
  ASSERT_NE(p, nullptr);
  for (std::size_t b = 0; b < 100000; ++b) p[b] = static_cast<unsigned char>(b * 7);
  // Something after it in the heap, so that glibc moves it.
  void* neighbour = g_next.malloc(1000);
  for (const std::size_t size : {std::size_t{150000}, std::size_t{1} << 20, std::size_t{9} << 20}) {
    auto* q = static_cast<unsigned char*>(hosted_grow(p, size, size));
    ASSERT_NE(q, nullptr) << size;
    EXPECT_EQ(address(q) % 4096, 64u) << size;
    const SampleHeader* h = hosted_header(q);
    ASSERT_NE(h, nullptr) << size;
    EXPECT_EQ(h->size, size);
    for (std::size_t b = 0; b < 100000; ++b)
      ASSERT_EQ(q[b], static_cast<unsigned char>(b * 7)) << size << " " << b;
    std::memset(q + 100000, 0x11, size - 100000);  // all of it is the block's
    p = q;
  }
  // Shrunk by a few bytes: the same chunk, the header says so.
  const std::int64_t held = hosted_bytes();
  auto* same = static_cast<unsigned char*>(
      hosted_resize(p, (std::size_t{9} << 20) - 100, (std::size_t{9} << 20) - 100));
  EXPECT_EQ(same, p);
  EXPECT_EQ(hosted_header(p)->size, (std::size_t{9} << 20) - 100);
  EXPECT_EQ(hosted_bytes(), held);
  // Shrunk to 5000 bytes: glibc's realloc gives the rest back; the bytes and the draw stay.
  hosted_header(p)->stack = 7;
  auto* small = static_cast<unsigned char*>(hosted_resize(p, 5000, 5000));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(address(small) % 4096, 64u);
  ASSERT_NE(hosted_header(small), nullptr);
  EXPECT_EQ(hosted_header(small)->size, 5000u);
  EXPECT_EQ(hosted_header(small)->stack, 7u);
  EXPECT_LE(hosted_bytes(), held - (std::int64_t{9} << 20) + 5000 + 4096 + 64);
  EXPECT_EQ(small[4999], static_cast<unsigned char>(4999 * 7));
  p = small;
  hosted_release(p);
  g_next.free(neighbour);
}

TEST_F(Hosted, AnUnsampledGrowthIsGlibcsOwnBlockWithTheContent) {
  const std::int64_t before = hosted_bytes();
  auto* p = static_cast<unsigned char*>(hosted_allocate(70000, 70000, false));
  ASSERT_NE(p, nullptr);
  for (std::size_t b = 0; b < 70000; ++b) p[b] = static_cast<unsigned char>(b * 13);
  auto* q = static_cast<unsigned char*>(hosted_unsample(p, 3 << 20));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(hosted_bytes(), before);
  EXPECT_GE(g_next.malloc_usable_size(q), std::size_t{3} << 20);  // a chunk of glibc's own
  for (std::size_t b = 0; b < 70000; ++b) ASSERT_EQ(q[b], static_cast<unsigned char>(b * 13)) << b;
  std::memset(q, 0, std::size_t{3} << 20);
  g_next.free(q);
}

// Freed, a block is no longer hosted: its second free reaches glibc, which aborts.
TEST_F(Hosted, ASecondFreeOfAHostedBlockAbortsInGlibc) {
  for (const std::size_t size : {std::size_t{200}, std::size_t{100000}}) {
    auto* keep = static_cast<unsigned char*>(hosted_allocate(size, size, false));
    auto* p = static_cast<unsigned char*>(hosted_allocate(size, size, false));
    ASSERT_NE(p, nullptr);
    ASSERT_NE(hosted_header(p), nullptr);
    // A counted sample's stack and session: the last 8 bytes before the block, where glibc
    // reads a chunk's size.
    hosted_header(p)->stack = 7;
    hosted_header(p)->session = 3;
    // Both frees in the death test's child: glibc's chunk is still free there (the death
    // test's own allocations, before it forks, could reuse it and put a chunk at p).
    EXPECT_DEATH(
        {
          hosted_release(p);
          if (hosted_header(p) == nullptr) free(p);
        },
        "free\\(\\): invalid")
        << size;
    hosted_release(p);
    EXPECT_EQ(hosted_header(p), nullptr) << size;
    hosted_release(keep);
  }
}

}  // namespace
}  // namespace liveheap::engine
