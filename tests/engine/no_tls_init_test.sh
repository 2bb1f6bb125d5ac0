#!/bin/sh
# liveheap's thread-locals are constant-initialized (constinit) where they are declared as
# well as where they are defined: a thread_local declared extern without it makes every
# access, the hooks' among them, first test whether a TLS init function exists (two
# instructions an allocation). No library may refer to one.
#   no_tls_init_test.sh binary...
set -eu
status=0
for binary in "$@"; do
  found=$(objdump -d --no-show-raw-insn -C "$binary" | grep 'TLS init function' | head -5 || true)
  if [ -n "$found" ]; then
    printf '%s refers to a TLS init function:\n%s\n' "$binary" "$found"
    status=1
  fi
done
exit $status
