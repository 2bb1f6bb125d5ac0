// Readable text tracebacks: pprof-style short names, source lines under frames (a bounded,
// lazy cache), runs of library frames folded; JSON keeps the full names.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "source_lines.hpp"

namespace liveheap {
namespace {

struct NameCase {
  const char* full;
  const char* shown;
};

TEST(ShortFunction, ElidesTemplatesParametersAndReturnTypes) {
  const NameCase cases[] = {
      {"std::__new_allocator<char>::allocate(unsigned long, void const*)",
       "std::__new_allocator<…>::allocate"},
      {"void boost::asio::detail::composed_op<boost::beast::http::detail::read_op<A, B<C> >, "
       "boost::beast::unlimited_rate_policy>::operator()<boost::system::error_code>("
       "boost::system::error_code&&, unsigned long)",
       "boost::asio::detail::composed_op<…>::operator()<…>"},
      {"boost::asio::detail::composed_op<X<Y>, Z>::complete(int)",
       "boost::asio::detail::composed_op<…>::complete"},
      {"leaky::(anonymous namespace)::Figure::Figure(unsigned long)",
       "leaky::(anonymous namespace)::Figure::Figure"},
      {"(anonymous namespace)::pool::free(void*) [clone .constprop.4]", "(anonymous namespace)::pool::free"},
      {"decltype (((*((std::optional<std::basic_string_view<char, std::char_traits<char> > > "
       "const* const)0)).(operator()<kStoryRoutes>))(static_cast<kStoryRoutes&&>({parm#1}))) "
       "kStoryRoutes::{lambda(auto:1)#2}::_FUN<std::optional<std::basic_string_view<char> > >("
       "kStoryRoutes)",
       "kStoryRoutes::{lambda(…)#2}::_FUN<…>"},
      {"operator()<std::optional<std::basic_string_view<char> > >", "operator()<…>"},
      {"main::{lambda()#1}::operator()() const", "main::{lambda()#1}::operator()"},
      {"run(int)::{lambda(int, char)#3}::operator()(int, char) const", "run::{lambda(…)#3}::operator()"},
      {"run_story[abi:cxx11](boost::beast::http::verb, std::basic_string_view<char>)", "run_story"},
      {"boost::asio::detail::scheduler::run(boost::system::error_code&) [clone .isra.0]",
       "boost::asio::detail::scheduler::run"},
      {"unsigned long const& std::max<unsigned long>(unsigned long const&, unsigned long const&)",
       "std::max<…>"},
      {"std::enable_if<call_traits<impl, F>::overload == call_member, void>::type "
       "boost_asio_execution_execute_fn::impl::operator()<E, F>(E&&, F&&) const",
       "boost_asio_execution_execute_fn::impl::operator()<…>"},
      {"bool std::operator< <char>(std::string const&, std::string const&)", "std::operator< <…>"},
      {"Money::operator<=>(Money const&) const", "Money::operator<=>"},
      {"Money::operator<(Money const&) const", "Money::operator<"},
      {"Stream::operator<<(int)", "Stream::operator<<"},
      {"Ptr::operator->() const", "Ptr::operator->"},
      {"Table::operator[](unsigned long)", "Table::operator[]"},
      {"Flag::operator bool() const", "Flag::operator bool"},
      {"operator new(unsigned long)", "operator new"},
      {"operator delete[](void*, unsigned long)", "operator delete[]"},
      {"non-virtual thunk to Sink::write(void const*, unsigned int)", "Sink::write"},
      {"std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke(std::_Any_data const&)",
       "std::_Function_handler<…>::_M_invoke"},
      {"my_operator(int)", "my_operator"},
      {"operators::apply()", "operators::apply"},
      {"main", "main"},
      {"leaky_server+0x1a2b", "leaky_server+0x1a2b"},
      {"__libc_start_main", "__libc_start_main"},
      {"", ""},
      // Cut short (a symbolizer's limit): never more than what is there, never a crash.
      {"std::vector<int, std::allocator<int", "std::vector<…>"},
      {"f(int, std::vector<", "f"},
      {"(", "("},
  };
  for (const NameCase& c : cases) EXPECT_EQ(short_function(c.full), c.shown) << c.full;
}

TEST(ShortFunction, DeepNestingIsNotRecursion) {
  const std::string deep = "f<" + std::string(200000, '<') + std::string(200000, '>') + ">(int)";
  EXPECT_EQ(short_function(deep), "f<…>");
}

// A temporary source file, removed at the end of the test.
class TempSource {
 public:
  explicit TempSource(const std::string& text)
      : path_(testing::TempDir() + "liveheap_src_" + std::to_string(::getpid()) + "_" +
              std::to_string(++counter_) + ".cpp") {
    std::ofstream(path_) << text;
  }
  ~TempSource() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(SourceLines, StrippedLinesLikeLinecache) {
  const TempSource src("int a;\n\t  keep(new Figure(id));  \r\n\nlast line without newline");
  report::SourceLines lines;
  EXPECT_EQ(lines.line(src.path(), 1), "int a;");
  EXPECT_EQ(lines.line(src.path(), 2), "keep(new Figure(id));");
  EXPECT_EQ(lines.line(src.path(), 3), "");
  EXPECT_EQ(lines.line(src.path(), 4), "last line without newline");
  EXPECT_EQ(lines.line(src.path(), 5), "");
  EXPECT_EQ(lines.line(src.path(), 0), "");
  EXPECT_EQ(lines.reads(), 1u);  // read once, then cached
  EXPECT_EQ(lines.line("/nonexistent/liveheap.cpp", 1), "");
  EXPECT_EQ(lines.line("/dev/zero", 1), "");  // not a regular file: never read
  EXPECT_EQ(lines.line("", 1), "");
  EXPECT_EQ(lines.reads(), 3u);  // "" is not even looked up
}

TEST(SourceLines, BoundedByFilesAndBytes) {
  const TempSource a("alpha\n");
  const TempSource b("beta\n");
  const TempSource big(std::string(100, 'x') + "\n");
  report::SourceLines lines({/*max_files=*/2, /*max_file_bytes=*/50, /*max_total_bytes=*/1000});
  EXPECT_EQ(lines.line(big.path(), 1), "");  // over max_file_bytes: skipped
  EXPECT_EQ(lines.line(a.path(), 1), "alpha");
  EXPECT_EQ(lines.line(b.path(), 1), "beta");  // evicts the oldest (big's empty entry)
  EXPECT_EQ(lines.reads(), 3u);
  EXPECT_EQ(lines.line(a.path(), 1), "alpha");
  EXPECT_EQ(lines.reads(), 3u);
  EXPECT_EQ(lines.line(big.path(), 1), "");  // evicts a
  EXPECT_EQ(lines.line(a.path(), 1), "alpha");
  EXPECT_EQ(lines.reads(), 5u);

  report::SourceLines small({/*max_files=*/10, /*max_file_bytes=*/50, /*max_total_bytes=*/8});
  EXPECT_EQ(small.line(a.path(), 1), "alpha");  // 6 bytes
  EXPECT_EQ(small.line(b.path(), 1), "beta");   // 5 more: a goes
  EXPECT_EQ(small.line(a.path(), 1), "alpha");
  EXPECT_EQ(small.reads(), 3u);
}

Frame std_frame(const char* function, const char* header, unsigned line) {
  return {function, std::string("/usr/include/c++/12/bits/") + header, line, "/bin/app", 0x10};
}
Frame asio_frame(const char* function, const char* header, unsigned line) {
  return {function, std::string("/usr/include/boost/asio/") + header, line, "/bin/app", 0x20};
}

TEST(ReadableTraceback, FramesSourceLinesAndFoldedLibraryRuns) {
  const TempSource src(
      "// figure\n"
      "Figure::Figure(std::size_t id) : pixels_(kWidth * kHeight) {}\n"
      "void render_figure() { g_open.emplace(id, std::make_unique<Figure>(id)); }\n");
  const Traceback tb{
      {"operator new(unsigned long)", "", 0, "/usr/lib/libliveheap.so", 0x1},
      std_frame("std::__new_allocator<char>::allocate(unsigned long, void const*)", "new_allocator.h", 137),
      std_frame("std::vector<unsigned char, std::allocator<unsigned char> >::vector(unsigned "
                "long, std::allocator<unsigned char> const&)",
                "stl_vector.h", 552),
      {"leaky::(anonymous namespace)::Figure::Figure(unsigned long)", src.path(), 2, "/bin/app", 0x30},
      std_frame("make_unique<leaky::(anonymous namespace)::Figure, long unsigned int const&>",
                "liveheap_no_such_unique_ptr.h", 1065),
      {"leaky::render_figure()", src.path(), 3, "/bin/app", 0x40},
      asio_frame("void boost::asio::detail::composed_op<A<B>, C>::operator()<D>(D&&)", "compose.hpp", 107),
      {"void boost::beast::http::detail::read_op<S, B>::operator()<Self>(Self&)",
       "/usr/include/boost/beast/http/impl/read.hpp", 307, "/bin/app", 0x50},
      asio_frame("boost::asio::io_context::run()", "impl/io_context.ipp", 63),
      {"main", src.path(), 1, "/bin/app", 0x60},
      {"__libc_start_main", "../csu/libc-start.c", 360, "/lib/x86_64-linux-gnu/libc.so.6", 0x70},
      {"_start", "", 0, "/bin/app", 0x80},
  };
  const std::vector<std::string> expected = {
      "  \u2026 3 frames in libliveheap.so, std \u2026",
      "  File \"" + src.path() + "\", line 2, in leaky::(anonymous namespace)::Figure::Figure",
      "    Figure::Figure(std::size_t id) : pixels_(kWidth * kHeight) {}",
      "  File \"/usr/include/c++/12/bits/liveheap_no_such_unique_ptr.h\", line 1065, in "
      "make_unique<\u2026>",
      "  File \"" + src.path() + "\", line 3, in leaky::render_figure",
      "    void render_figure() { g_open.emplace(id, std::make_unique<Figure>(id)); }",
      "  \u2026 3 frames in boost::asio, boost::beast \u2026",
      "  File \"" + src.path() + "\", line 1, in main",
      "    // figure",
      "  File \"../csu/libc-start.c\", line 360, in __libc_start_main",
      "  File \"/bin/app\", in _start",
  };
  EXPECT_EQ(format_traceback(tb), expected);

  const std::vector<std::string> plain = format_traceback(tb, {.source = false, .fold = false});
  ASSERT_EQ(plain.size(), tb.size());
  EXPECT_EQ(plain[0], "  File \"/usr/lib/libliveheap.so\", in operator new");
  EXPECT_EQ(plain[6],
            "  File \"/usr/include/boost/asio/compose.hpp\", line 107, in "
            "boost::asio::detail::composed_op<\u2026>::operator()<\u2026>");
}

TEST(ReadableTraceback, TwoLibraryFramesFoldOneDoesNot) {
  const Traceback tb{
      std_frame("std::__new_allocator<char>::allocate(unsigned long)", "new_allocator.h", 137),
      std_frame("std::allocator<char>::allocate(unsigned long)", "allocator.h", 188),
      {"work()", "/src/a.cpp", 5, "/bin/app", 0x1},
      std_frame("std::function<void ()>::operator()() const", "std_function.h", 591),
      {"main", "/src/a.cpp", 9, "/bin/app", 0x2},
  };
  EXPECT_EQ(
      format_traceback(tb, {.source = false}),
      (std::vector<std::string>{"  \u2026 2 frames in std \u2026", "  File \"/src/a.cpp\", line 5, in work",
                                "  File \"/usr/include/c++/12/bits/std_function.h\", line 591, in "
                                "std::function<\u2026>::operator()",
                                "  File \"/src/a.cpp\", line 9, in main"}));
}

// Folded stacks (flamegraph's input) leave out what the text folds above the user's frame:
// the leaf is the line that asked for the memory; frames below it stay, library or not.
TEST(FoldedStack, PlumbingAboveTheUsersFrameIsLeftOut) {
  const Traceback tb{
      {"operator new(unsigned long)", "", 0, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 0x5},
      std_frame("std::__new_allocator<char>::allocate(unsigned long)", "new_allocator.h", 137),
      {"work()", "/src/a.cpp", 5, "/bin/app", 0x10},
      asio_frame("boost::asio::detail::scheduler::run()", "scheduler.ipp", 200),
      {"main", "/src/main.cpp", 9, "/bin/app", 0x30},
  };
  EXPECT_EQ(folded_stack(tb), "main;boost::asio::detail::scheduler::run();work()");
  // Nothing but plumbing: the stack is kept whole rather than emptied.
  const Traceback plumbing{tb[0], tb[1]};
  EXPECT_EQ(folded_stack(plumbing),
            "std::__new_allocator<char>::allocate(unsigned long);operator new(unsigned long)");
}

// A stripped program installed under /usr/lib (PostgreSQL's postmaster) has only
// module+offset frames, which look like a system library's: folding must not hide them all.
TEST(ReadableTraceback, AStrippedProgramUnderUsrLibKeepsItsFrames) {
  const std::string postgres = "/usr/lib/postgresql/15/bin/postgres";
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  const auto in = [](const std::string& module, std::uint64_t offset) {
    char name[64];
    std::snprintf(name, sizeof name, "+0x%llx", static_cast<unsigned long long>(offset));
    return Frame{module.substr(module.rfind('/') + 1) + name, "", 0, module, offset};
  };
  const Traceback tb{in(libc, 0x9a0),     in(libc, 0x9b0),   in(postgres, 0x100), in(postgres, 0x200),
                     in(postgres, 0x300), in(libc, 0x271ca), in(postgres, 0x400)};
  const std::vector<std::string> expected = {
      "  \u2026 2 frames in libc.so.6 \u2026",          "  File \"" + postgres + "\", in postgres+0x100",
      "  File \"" + postgres + "\", in postgres+0x200", "  File \"" + postgres + "\", in postgres+0x300",
      "  File \"" + libc + "\", in libc.so.6+0x271ca",  "  File \"" + postgres + "\", in postgres+0x400",
  };
  EXPECT_EQ(format_traceback(tb, {.source = false}), expected);
  // With a frame of the program's own code elsewhere, library frames fold as before.
  const Traceback mixed{
      in(postgres, 0x100), in(postgres, 0x200), {"main", "/src/main.cpp", 9, "/bin/app", 0x30}};
  EXPECT_EQ(format_traceback(mixed, {.source = false}),
            (std::vector<std::string>{"  \u2026 2 frames in postgres \u2026",
                                      "  File \"/src/main.cpp\", line 9, in main"}));
}

TEST(ReadableTraceback, MoreThanThreeLibrariesAreCounted) {
  const Traceback tb{
      {"a::f()", "/usr/include/boost/asio/x.hpp", 1, "", 0},
      {"b::f()", "/usr/include/boost/beast/x.hpp", 1, "", 0},
      {"c::f()", "/usr/include/c++/12/x.h", 1, "", 0},
      {"d::f()", "/usr/include/fmt/x.h", 1, "", 0},
      {"e::f()", "/usr/include/spdlog/x.h", 1, "", 0},
  };
  EXPECT_EQ(format_traceback(tb),
            std::vector<std::string>{"  \u2026 5 frames in boost::asio, boost::beast, std (+2 more) \u2026"});
}

TEST(ReadableTraceback, EveryLineFitsTheColumns) {
  std::string huge = "void boost::asio::detail::x<int>::";
  for (int i = 0; i < 40; ++i) huge += "very_long_component_name_number_" + std::to_string(i) + "::";
  huge += "f(int)";
  const TempSource src(std::string(500, 'y') + "\n");
  const Traceback tb{{huge, src.path(), 1, "/bin/app", 0}};
  const auto lines = format_traceback(tb, {.max_columns = 120});
  ASSERT_EQ(lines.size(), 2u);
  const std::string head = "  File \"" + src.path() + "\", line 1, in ";
  EXPECT_EQ(lines[0].rfind(head + "boost::asio::detail::x<\u2026>::", 0), 0u) << lines[0];
  EXPECT_TRUE(lines[0].ends_with("number_39::f")) << lines[0];
  EXPECT_EQ(lines[1], "    " + std::string(55, 'y') + "\u2026" + std::string(60, 'y'));
  for (const std::string& line : lines) {
    std::size_t columns = 0;
    for (char c : line) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    EXPECT_EQ(columns, 120u) << line;
  }
}

TEST(ReadableTraceback, JsonKeepsFullNamesAndAddsShortOnes) {
  const Frame f{"void ns::op<int>::run(int) const", "/src/a.cpp", 7, "/bin/app", 0x10};
  const nlohmann::json frame = to_json(f);
  EXPECT_EQ(frame["function"], "void ns::op<int>::run(int) const");
  EXPECT_EQ(frame["short_function"], "ns::op<\u2026>::run");
  const nlohmann::json stat = to_json(Statistic{{f}, 100, 1}, KeyType::line);
  EXPECT_EQ(stat["function"], "void ns::op<int>::run(int) const");
  EXPECT_EQ(stat["short_function"], "ns::op<\u2026>::run");
  EXPECT_EQ(stat["traceback"][0]["short_function"], "ns::op<\u2026>::run");
}

}  // namespace
}  // namespace liveheap
