#!/usr/bin/env bash
# One command per job, on a fresh Debian 12 machine (run as root, or with sudo available):
#   ./build.sh run    install what is missing, build, start the sample server with the dashboard
#   ./build.sh test   install what is missing, build, run every test (ends with ctest's summary)
#   ./build.sh check  build what changed, run the fast tier (the layers' own tests, ctest -L fast)
#   ./build.sh bench  install what is missing, build, run the overhead benchmark
#   ./build.sh fuzz   install what is missing, build the fuzzers (clang, ASan+UBSan), run each
#                     for LIVEHEAP_FUZZ_SECONDS (600) at once; exits non-zero on any finding
set -euo pipefail
cd "$(dirname "$0")"

BUILD_DIR=${LIVEHEAP_BUILD_DIR:-build}
JOBS=${LIVEHEAP_JOBS:-$(nproc)}

# Debian packages each job needs (Boost 1.81: 1.74 lacks Beast's message_generator).
BUILD_PACKAGES=(g++ cmake make ninja-build libboost1.81-dev libboost-stacktrace1.81-dev
                nlohmann-json3-dev libunwind-dev zlib1g-dev curl)
# The allocators, unmodified programs and ecosystem tools liveheap is tested with (the
# servers among them run as the tests start them, on free ports, not as installed services).
TEST_PACKAGES=(libgtest-dev chromium valgrind libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
               python3 perl sqlite3 git golang-go golang-github-google-pprof-dev prometheus
               python3-flask gunicorn python3-matplotlib python3-torch clang libclang-rt-14-dev
               redis-server redis-tools nginx postgresql-15 nodejs libpython3.11-dev clang-format
               gdb)  # gdb: the stacks of a real program's process that did not exit, in the failure
# The fuzzers: clang's libFuzzer and sanitizer runtimes (docs/fuzzing.md).
FUZZ_PACKAGES=(libgtest-dev clang libclang-rt-14-dev)
# python3-matplotlib and python3-torch (~136 MB of archives): the real workloads of the bench rows.
BENCH_PACKAGES=(heaptrack libjemalloc2 wrk python3 python3-matplotlib python3-torch python3-flask gunicorn)

# Ninja for new build directories (an existing one keeps its generator): it compiles a
# target's files while the libraries it links are still being built, which keeps both
# cores busy to the end of the build (make waits for each library first).
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The browser test drives Debian's chromium through playwright-core (no browser download).
# node and npm are looked for as commands: a machine may have them from elsewhere (e.g.
# nodesource's nodejs, which bundles npm and conflicts with Debian's npm package).
install_browser_test_deps() {
  command -v node >/dev/null && command -v npm >/dev/null || install_packages nodejs npm
  if [ ! -d tests/browser/node_modules/playwright-core ]; then
    echo "== npm install (tests/browser)"
    (cd tests/browser && npm install --no-audit --no-fund --loglevel=error)
  fi
}

build() {
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# `run` and `bench` leave the tests out of a fresh tree (building them would take most of
# their time); a tree configured before keeps its own setting, so that `./build.sh run`
# in a developer's tree does not turn its tests off.
tests_off_if_fresh() {
  [ -f "$BUILD_DIR/CMakeCache.txt" ] || echo "-DLIVEHEAP_BUILD_TESTS=OFF"
}

case "${1:-}" in
  run)
    install_packages "${BUILD_PACKAGES[@]}"
    build $(tests_off_if_fresh)
    exec "$BUILD_DIR/samples/leaky_server" --host 127.0.0.1 --port "${PORT:-8080}"
    ;;
  test)
    install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    install_browser_test_deps
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIVEHEAP_BUILD_TESTS=ON >/dev/null
    # The sanitizer trees (tests/sanitize) build in the background at the lowest priority,
    # on the CPU that the main build and then the other tests leave (most of those wait on
    # real programs, sockets and clocks); the sanitizer tier runs last, its asan_build and
    # tsan_build finding their trees built (a failed build fails there, with its output).
    # Without clang there is no such script, and no such tier. set -m: a process group of
    # its own, ended with the script; not setsid, whose new session would be a scheduler
    # autogroup of its own, where nice is not weighed against the tests.
    set -m
    nice -n 19 cmake -P "$BUILD_DIR/sanitizer_trees.cmake" >"$BUILD_DIR/sanitizer_trees.log" 2>&1 &
    trees=$!
    set +m
    trap 'kill -- -$trees 2>/dev/null || true' EXIT
    cmake --build "$BUILD_DIR" -j "$JOBS"
    cd "$BUILD_DIR"
    status=0
    ctest --output-on-failure --timeout 600 -j "$JOBS" -LE sanitizer || status=1
    wait "$trees" || true
    ctest --output-on-failure --timeout 600 -j "$JOBS" -L sanitizer || status=1
    exit $status
    ;;
  check)
    install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    build -DLIVEHEAP_BUILD_TESTS=ON
    cd "$BUILD_DIR"
    ctest --output-on-failure --timeout 600 -j "$JOBS" -L fast
    ;;
  bench)
    install_packages "${BUILD_PACKAGES[@]}" "${BENCH_PACKAGES[@]}"
    build $(tests_off_if_fresh)
    cmake --build "$BUILD_DIR" -j "$JOBS" --target overhead_bench  # not in the default build
    exec "$BUILD_DIR/samples/overhead_bench" "${@:2}"
    ;;
  fuzz)
    install_packages "${BUILD_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
    # A tree of its own at -O1 (the test command's ASan tree is -O0: shorter to build, slower to run).
    cmake -DSOURCE=. -DBINARY="$BUILD_DIR/fuzz" -DSANITIZE=address -DCXX=clang++ -DCC=clang \
      "-DTARGETS=query_fuzzer;handler_fuzzer" -DJOBS="$JOBS" -P tests/sanitize/build_tree.cmake
    pids=()
    for fuzzer in query handler; do
      tests/fuzz/run_fuzzer.sh "$BUILD_DIR/fuzz/tests/fuzz/${fuzzer}_fuzzer" \
        "tests/fuzz/corpus/$fuzzer" "$BUILD_DIR/fuzz/fuzz-long-$fuzzer" -seed=0 \
        -max_total_time="${LIVEHEAP_FUZZ_SECONDS:-600}" >"$BUILD_DIR/fuzz/fuzz-long-$fuzzer.log" 2>&1 &
      pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    for fuzzer in query handler; do
      echo "== $fuzzer: $(grep -E '^(stat::number_of_executed_units|==.*ERROR)' \
        "$BUILD_DIR/fuzz/fuzz-long-$fuzzer.log" | tr '\n' ' ')(log: $BUILD_DIR/fuzz/fuzz-long-$fuzzer.log)"
    done
    exit $status
    ;;
  *)
    echo "usage: $0 run|test|check|bench|fuzz" >&2
    exit 2
    ;;
esac
