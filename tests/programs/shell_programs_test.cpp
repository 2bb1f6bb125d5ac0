// Debian's everyday programs under the preload library behave exactly as bare: bash
// pipelines, git, sqlite3, python3 and node print the same, exit the same, write nothing
// to stderr but liveheap's announcements, and finish within a bound, in exact and sampled mode,
// holding LIVEHEAP_ADDR's port or reached through another process that holds it.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

constexpr auto kRunTimeout = 30s;  // any run: a few seconds bare, on a loaded machine

// `preloaded` did what `bare` did: same stdout and exit, nothing on stderr (liveheap says
// nothing there unless LIVEHEAP_LOG asks), in time.
void expect_like_bare(const ProgramRun& bare, const ProgramRun& preloaded, const std::string& what) {
  EXPECT_FALSE(preloaded.timed_out) << what << ": hung (bare took " << bare.took.count() << " ms)";
  EXPECT_EQ(preloaded.how(), bare.how()) << what << "\nstderr: " << preloaded.err;
  EXPECT_EQ(preloaded.out, bare.out) << what;
  EXPECT_EQ(preloaded.err, "") << what;
}

// Runs `argv` bare (which must succeed quietly) and in every configuration.
void expect_every_configuration_like_bare(const std::vector<std::string>& argv, const std::string& cwd = "") {
  test_support::TempDir runtime;
  const ProgramRun bare = run(argv, {}, kRunTimeout, cwd);
  ASSERT_EQ(bare.how(), "exit 0") << argv.back() << "\nstderr: " << bare.err;
  ASSERT_EQ(bare.err, "") << argv.back();
  for_each_configuration(runtime.path(), [&](const Configuration&, const auto& env, auto) {
    expect_like_bare(bare, run(argv, env, kRunTimeout, cwd), argv.back());
  });
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(RealPrograms, BashPipelinesSubshellsAndSubstitutionsRunAsBare) {
  ASSERT_TRUE(installed("/bin/bash", "bash"));
  // The sleeps let liveheap's threads start (they wait 100 ms) before bash forks; the last
  // command counts the descriptors a child that is not preloaded inherits (ls's own, plus
  // anything leaked to it across fork and exec).
  for (const std::string script :
       {"sleep 1.5; seq 10 | wc -l",
        "sleep 0.3; x=$(seq 1 200 | sort -rn | head -3 | tr '\\n' ' '); echo \"[$x]\"; "
        "(cd / && pwd; (echo nested | tr a-z A-Z)); echo $(( $(seq 100 | wc -l) * 2 )); "
        "for i in 1 2 3; do echo $i; done | while read n; do echo $((n * n)); done; "
        "env -u LD_PRELOAD ls /proc/self/fd | wc -l"}) {
    expect_every_configuration_like_bare({"/bin/bash", "-c", script});
  }
}

TEST(RealPrograms, GitCommitsAndCollectsGarbageAsBare) {
  ASSERT_TRUE(installed("/usr/bin/git", "git"));
  // Fixed identities and dates make the commit hashes the same in every run.
  const std::vector<std::string> git_env = {"GIT_AUTHOR_NAME=Test",
                                            "GIT_AUTHOR_EMAIL=test@example.com",
                                            "GIT_COMMITTER_NAME=Test",
                                            "GIT_COMMITTER_EMAIL=test@example.com",
                                            "GIT_AUTHOR_DATE=1700000000 +0000",
                                            "GIT_COMMITTER_DATE=1700000000 +0000",
                                            "GIT_CONFIG_NOSYSTEM=1",
                                            "GIT_CONFIG_GLOBAL=/dev/null"};
  // The whole story in a fresh repository; every command's output and exit, in order.
  auto story = [&](const std::vector<std::string>& env, const std::string& dir) {
    std::vector<std::string> all = git_env;
    all.insert(all.end(), env.begin(), env.end());
    ProgramRun combined;
    combined.exit_code = 0;
    auto git = [&](std::vector<std::string> args) {
      args.insert(args.begin(), "/usr/bin/git");
      const ProgramRun step = run(args, all, kRunTimeout, dir);
      combined.out += "$ git " + args[1] + " -> " + step.how() + "\n" + step.out;
      combined.err += step.err;
      combined.took += step.took;
      combined.timed_out |= step.timed_out;
      if (step.how() != "exit 0") combined.exit_code = 1;
    };
    git({"init", "-q", "-b", "main", "."});
    for (int i = 0; i < 2; ++i) {
      for (int f = 0; f < 20; ++f) {
        std::ostringstream text;
        for (int line = 0; line < 50 * (i + 1); ++line) text << "file " << f << " line " << line << "\n";
        write_file(dir + "/file" + std::to_string(f) + ".txt", text.str());
      }
      git({"add", "-A"});
      git({"commit", "-q", "-m", "commit " + std::to_string(i)});
    }
    git({"gc", "-q"});
    git({"log", "--format=%H %s"});
    git({"rev-list", "--all", "--objects", "--count"});
    return combined;
  };
  test_support::TempDir bare_dir;
  const ProgramRun bare = story({}, bare_dir.path());
  ASSERT_EQ(bare.how(), "exit 0") << bare.out << bare.err;
  ASSERT_EQ(bare.err, "");
  test_support::TempDir runtime;
  for_each_configuration(runtime.path(), [&](const Configuration&, const auto& env, auto) {
    test_support::TempDir dir;
    expect_like_bare(bare, story(env, dir.path()), "git");
  });
}

TEST(RealPrograms, Sqlite3RunsAScriptAsBare) {
  ASSERT_TRUE(installed("/usr/bin/sqlite3", "sqlite3"));
  test_support::TempDir dir;
  write_file(dir / "script.sql", R"(
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER, payload BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
  INSERT INTO t SELECT x, printf('name-%05d', x), x * 7 % 1000, zeroblob(100) FROM c;
CREATE INDEX t_n ON t(n);
SELECT count(*), sum(n), max(name), sum(length(payload)) FROM t;
SELECT n, count(*) FROM t GROUP BY n ORDER BY count(*) DESC, n LIMIT 3;
DELETE FROM t WHERE id % 2 = 0;
VACUUM;
SELECT count(*) FROM t WHERE name LIKE 'name-1%';
)");
  const std::string script = ".read " + (dir / "script.sql");
  // A new database file per run: the script creates its table.
  test_support::TempDir runtime;
  int runs = 0;
  auto sqlite = [&](const std::vector<std::string>& env) {
    return run({"/usr/bin/sqlite3", dir / ("db" + std::to_string(runs++)), script}, env, kRunTimeout);
  };
  const ProgramRun bare = sqlite({});
  ASSERT_EQ(bare.how(), "exit 0") << bare.err;
  ASSERT_EQ(bare.err, "");
  for_each_configuration(runtime.path(), [&](const Configuration&, const auto& env, auto) {
    expect_like_bare(bare, sqlite(env), "sqlite3");
  });
}

TEST(RealPrograms, Python3RunsAScriptAsBare) {
  ASSERT_TRUE(installed("/usr/bin/python3", "python3"));
  test_support::TempDir dir;
  // Dictionaries, JSON, a thread pool, a subprocess (fork and exec) and a hash.
  write_file(dir / "script.py", R"(
import hashlib, json, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
table = {i: str(i) * (i % 50) for i in range(50000)}
text = json.dumps(table)
print(len(text), hashlib.sha256(text.encode()).hexdigest())
with ThreadPoolExecutor(4) as pool:
    print(sum(pool.map(lambda n: sum(range(n)), range(2000))))
print(subprocess.run(["/bin/echo", "from a child"], capture_output=True, text=True).stdout, end="")
blocks = [bytearray(1 << 20) for _ in range(32)]
print(sum(len(b) for b in blocks))
)");
  expect_every_configuration_like_bare({"/usr/bin/python3", "-B", dir / "script.py"});
}

TEST(RealPrograms, NodeAllocatesArrayBuffersAsBare) {
  ASSERT_TRUE(installed("/usr/bin/node", "nodejs"));
  expect_every_configuration_like_bare({"/usr/bin/node", "-e", R"(
const buffers = [];
for (let i = 0; i < 64; i++) buffers.push(new ArrayBuffer(1 << 20));
let total = 0;
for (const b of buffers) total += b.byteLength;
const words = new Map();
for (let i = 0; i < 100000; i++) words.set('w' + (i % 5000), i);
console.log(total, words.size, JSON.stringify([1, 2, 3].map((x) => x * 2)));
)"});
}

}  // namespace
}  // namespace programs_test
