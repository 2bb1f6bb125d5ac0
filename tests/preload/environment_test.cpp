// The preload library under real programs: LIVEHEAP_* values, good and bad. A bad value
// is reported once on stderr and the program runs on, untracked.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace {

struct ProcessResult {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `program` with LD_PRELOAD=the preload library and `env` prepended; captures output.
ProcessResult run_preloaded(const std::string& env, const std::string& program) {
  // One file per test process and test: ctest runs these tests in parallel.
  const std::string err_file = testing::TempDir() + "liveheap_env_err_" + std::to_string(::getpid()) + "_" +
                               testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
  const std::string command =
      "env LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " " + env + " " + program + " 2>" + err_file;
  ProcessResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) run.out.append(buffer.data(), n);
  run.status = pclose(pipe);
  if (FILE* f = std::fopen(err_file.c_str(), "r")) {
    while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), f)) run.err.append(buffer.data(), n);
    std::fclose(f);
  }
  std::remove(err_file.c_str());
  return run;
}

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(PreloadEnvironment, BadValuesAreReportedOnceAndTheProgramRunsOn) {
  const char* bad[] = {
      "LIVEHEAP_MODE=bogus", "LIVEHEAP_MODE=", "LIVEHEAP_FRAMES=0", "LIVEHEAP_FRAMES=129",
      "LIVEHEAP_FRAMES=12abc", "LIVEHEAP_FRAMES=-1", "LIVEHEAP_SAMPLE_INTERVAL=0",
      "LIVEHEAP_SAMPLE_INTERVAL=99999999999999999999", "LIVEHEAP_ADDR=host:port",
      "LIVEHEAP_ADDR=127.0.0.1:70000", "LIVEHEAP_PLUMBING=function:[oops", "LIVEHEAP_PLUMBING=a,,b",
      "LIVEHEAP_PLUMBING=", "LIVEHEAP_PLUMBING=function:", "LIVEHEAP_MAX_TRACKER_MEMORY=256M",
      "LIVEHEAP_MAX_TRACKER_MEMORY=0", "LIVEHEAP_MAX_TRACKER_MEMORY=", "LIVEHEAP_MAX_TRACKER_MEMORY=2TiB",
      "LIVEHEAP_HISTORY_INTERVAL=abc", "LIVEHEAP_HISTORY_INTERVAL=-1",
      // The endpoint's variables, checked when the endpoint starts: each
      // keeps it off, instead of failing every request (or never matching).
      "LIVEHEAP_TOKEN=' abc ' LIVEHEAP_ADDR=127.0.0.1:0", "LIVEHEAP_TOKEN='abc ' LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_TOKEN=\"$(printf 'ab\\001c')\" LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_METRICS_CALLSITES=abc LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_METRICS_CALLSITES=1001 LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_PREFIX=debug LIVEHEAP_ADDR=127.0.0.1:0", "LIVEHEAP_PREFIX='/a b' LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_ALLOWED_HOSTS=http://heap.internal LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_ALLOWED_HOSTS='heap.internal:99999' LIVEHEAP_ADDR=127.0.0.1:0",
      "LIVEHEAP_ALLOW_OPEN=yes LIVEHEAP_ADDR=127.0.0.1:0"};
  for (const char* env : bad) {
    const ProcessResult run = run_preloaded(env, LIVEHEAP_EXACT_TRUTH_PATH);
    EXPECT_EQ(run.status, 0) << env;
    EXPECT_NE(run.out.find("ALLOCATED"), std::string::npos) << env;
    EXPECT_EQ(count_lines(run.err), 1) << env << ": " << run.err;
    EXPECT_EQ(run.err.rfind("liveheap: ", 0), 0u) << env << ": " << run.err;
    EXPECT_NE(run.err.find(std::string(env).substr(0, std::string(env).find('='))), std::string::npos)
        << "the message names the variable: " << run.err;
  }
}

// An empty token is a mistake, not "no authentication"; a port open to the
// network without a token needs an explicit opt-in; IPv6 addresses in brackets work.
TEST(PreloadEnvironment, TheAdminServerIsNeverOpenByAccident) {
  const std::string refused =
      "liveheap: admin server not started: refusing to serve 0.0.0.0:0 without a token: anyone "
      "who can reach it could read the heap and stop tracing; set LIVEHEAP_TOKEN "
      "(Config::token), listen on 127.0.0.1, or opt in with LIVEHEAP_ALLOW_OPEN=1 "
      "(Config::allow_open_without_token)\n";
  const std::pair<const char*, std::string> cases[] = {
      {"LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_TOKEN=",
       "liveheap: admin server not started: LIVEHEAP_TOKEN is empty\n"},
      {"LIVEHEAP_ADDR=0.0.0.0:0", refused},
      {"LIVEHEAP_ADDR=0.0.0.0:0 LIVEHEAP_ALLOW_OPEN=0", refused},
      {"LIVEHEAP_ADDR=0.0.0.0:0 LIVEHEAP_ALLOW_OPEN=yes",
       "liveheap: admin server not started: LIVEHEAP_ALLOW_OPEN='yes' is not 0 or 1\n"},
      {"LIVEHEAP_ADDR=::1:0",
       "liveheap: admin server not started: LIVEHEAP_ADDR='::1:0' is not [host:]port with a port "
       "from 0 to 65535 (an IPv6 host in brackets, e.g. [::1]:6060)\n"},
  };
  for (const auto& [env, message] : cases) {
    const ProcessResult run = run_preloaded(env, LIVEHEAP_EXACT_TRUTH_PATH);
    EXPECT_EQ(run.status, 0) << env;
    EXPECT_EQ(run.err, message) << env;
  }
  // A token no request could present is a configuration error, as an empty one is; the
  // message never repeats the token.
  EXPECT_EQ(
      run_preloaded("LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_TOKEN=' s3cret '", LIVEHEAP_EXACT_TRUTH_PATH).err,
      "liveheap: admin server not started: LIVEHEAP_TOKEN has whitespace at its start or "
      "end, which HTTP trims from the Authorization header: it could never match; remove it\n");
  EXPECT_EQ(
      run_preloaded("LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_METRICS_CALLSITES=abc", LIVEHEAP_EXACT_TRUTH_PATH)
          .err,
      "liveheap: admin server not started: LIVEHEAP_METRICS_CALLSITES must be 0..1000, got 'abc'\n");
  // Served, each says where when LIVEHEAP_LOG asks it to.
  for (const char* env :
       {"LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_METRICS_CALLSITES=5 LIVEHEAP_PREFIX=/mem/ "
        "LIVEHEAP_ALLOWED_HOSTS='heap.internal, box:6060,[fd00::1]' "
        "LIVEHEAP_TOKEN='inner space'",
        "LIVEHEAP_ADDR=0.0.0.0:0 LIVEHEAP_ALLOW_OPEN=1", "LIVEHEAP_ADDR=0.0.0.0:0 LIVEHEAP_TOKEN=t0ken",
        "LIVEHEAP_ADDR=[::1]:0", "LIVEHEAP_ADDR=localhost:0"}) {
    const ProcessResult run =
        run_preloaded(std::string("LIVEHEAP_LOG=stderr ") + env, LIVEHEAP_EXACT_TRUTH_PATH);
    EXPECT_EQ(run.status, 0) << env;
    EXPECT_EQ(run.err.rfind("liveheap: serving http://", 0), 0u) << env << ": " << run.err;
  }
  EXPECT_EQ(run_preloaded("LIVEHEAP_LOG=stderr LIVEHEAP_ADDR=[::1]:0", LIVEHEAP_EXACT_TRUTH_PATH)
                .err.rfind("liveheap: serving http://[::1]:", 0),
            0u);
}

// Serving is news, not a mistake: the host's stderr (which a shell's $(cmd 2>&1) or a test
// may read) gets nothing unless LIVEHEAP_LOG names it; a file named gets the line; a value
// that is neither is a configuration error, said once.
TEST(PreloadEnvironment, TheServingLineGoesOnlyWhereLiveheapLogSays) {
  for (const char* addr : {"LIVEHEAP_ADDR=127.0.0.1:0", "LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_PREFIX=/mem"}) {
    const ProcessResult quiet = run_preloaded(addr, LIVEHEAP_EXACT_TRUTH_PATH);
    EXPECT_EQ(quiet.status, 0) << addr;
    EXPECT_NE(quiet.out.find("ALLOCATED"), std::string::npos) << addr;
    EXPECT_EQ(quiet.err, "") << addr;
  }
  const std::string log = testing::TempDir() + "liveheap_log_" + std::to_string(::getpid());
  std::remove(log.c_str());
  const ProcessResult logged =
      run_preloaded("LIVEHEAP_LOG=" + log + " LIVEHEAP_ADDR=127.0.0.1:0", LIVEHEAP_EXACT_TRUTH_PATH);
  EXPECT_EQ(logged.err, "");
  std::ifstream file(log);
  std::string line;
  ASSERT_TRUE(std::getline(file, line)) << "nothing in " << log;
  EXPECT_EQ(line.rfind("liveheap: serving http://127.0.0.1:", 0), 0u) << line;
  std::remove(log.c_str());
  const ProcessResult bad =
      run_preloaded("LIVEHEAP_LOG=relative.log LIVEHEAP_ADDR=127.0.0.1:0", LIVEHEAP_EXACT_TRUTH_PATH);
  EXPECT_EQ(bad.status, 0);
  EXPECT_EQ(bad.err,
            "liveheap: LIVEHEAP_LOG='relative.log' is neither stderr nor an absolute path: "
            "liveheap's lines are not written\n");
  EXPECT_NE(::access("relative.log", F_OK), 0);
}

TEST(PreloadEnvironment, EveryModeRunsRealProgramsQuietly) {
  for (const char* env :
       {"LIVEHEAP_MODE=off", "LIVEHEAP_MODE=exact", "LIVEHEAP_MODE=sampled",
        "LIVEHEAP_MODE=exact LIVEHEAP_FRAMES=128", "LIVEHEAP_MODE=sampled LIVEHEAP_SAMPLE_INTERVAL=1",
        "LIVEHEAP_MODE=exact LIVEHEAP_MAX_TRACKER_MEMORY=1MiB",
        "LIVEHEAP_MODE=sampled LIVEHEAP_MAX_TRACKER_MEMORY=1MiB"}) {
    const ProcessResult own = run_preloaded(env, LIVEHEAP_EXACT_TRUTH_PATH);
    EXPECT_EQ(own.status, 0) << env;
    EXPECT_EQ(own.err, "") << env;
    // Programs no one here wrote: a shell pipeline and a sort of 20k lines.
    const ProcessResult shell = run_preloaded(env, "sh -c 'seq 1 20000 | sort -rn | head -1'");
    EXPECT_EQ(shell.status, 0) << env;
    EXPECT_EQ(shell.out, "20000\n") << env;
    EXPECT_EQ(shell.err, "") << env;
  }
}

}  // namespace
