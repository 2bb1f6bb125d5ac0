#!/usr/bin/env bash
# Runs one libFuzzer target over its seed corpus: run_fuzzer.sh FUZZER SEEDS WORK [OPTIONS...]
# New inputs go to WORK/corpus (emptied first, so that a run is repeatable: -seed=1 unless
# OPTIONS say otherwise) and crashes to WORK/; the seeds in the source tree are never written.
# Exits non-zero on any crash, sanitizer report, leak or timeout, printing the input.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
shift 3
rm -rf "$work/corpus"
mkdir -p "$work/corpus"
exec "$fuzzer" -seed=1 -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$@" "$work/corpus" "$seeds"
