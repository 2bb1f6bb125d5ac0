#!/bin/sh
# The engine's own code (src/engine/own_code.hpp) in each built binary: every function on
# the path from a hook to the stack walk, and every split-off part or clone of it
# ([clone .cold], .part.N, .constprop.N, .isra.N), lies between __start_liveheap_text and
# __stop_liveheap_text; and nothing else does. A part outside would keep liveheap frames on
# top of the stacks; a test's function inside would lose the test's own frames.
#   own_code_section_test.sh binary...
set -eu
status=0
for binary in "$@"; do
  nm -C --defined-only "$binary" | awk -v binary="$binary" '
    # The function a symbol belongs to: its name without clone suffix, template arguments
    # or parameters ("liveheap::engine::on_alloc", "operator new", "malloc").
    function base(name) {
      gsub(/\(anonymous namespace\)/, "@anon@", name)
      sub(/ \[clone [^]]*\]/, "", name)
      sub(/\(.*/, "", name)
      sub(/<.*/, "", name)
      return name
    }
    function on_path(f) {
      if (f ~ /^(malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|operator new|operator new\[\]|operator delete|operator delete\[\])$/) return 1
      if (f ~ /^liveheap::engine::(on_alloc|malloc_exact|new_exact|sample_allocate|sample_resize|sample_regrow|capture_stack|capture_stack_with|another_repeated_walk)$/) return 1
      if (f ~ /^liveheap::engine::@anon@::(record_alloc|capture_and_intern|spare_walk|python_stack|count_sample|record_traced|walk_with_frame_rules|capture_with_other_unwinders|walk_with_libunwind|walk_with_libgcc|collect)$/) return 1
      if (f ~ /^@anon@::(allocate|realloc_sampled|realloc_maybe_sampled|realloc_exact|allocate_sampled|allocate_tracked|new_impl|new_tracked|new_untracked)$/) return 1
      return 0
    }
    {
      address = "x" $1  # nm pads addresses to one width: compared as strings
      type = $2
      name = $0
      sub(/^[^ ]+ [^ ]+ /, "", name)
      if (name == "__start_liveheap_text") start = address
      else if (name == "__stop_liveheap_text") stop = address
      else if (type ~ /^[tTwW]$/) { addresses[NR] = address; names[NR] = name }
    }
    END {
      if (start == "" || stop == "" || stop <= start) {
        printf "%s: no liveheap_text section\n", binary
        exit 1
      }
      # Functions with any part in the section.
      for (i in names)
        if (addresses[i] >= start && addresses[i] < stop) inside[base(names[i])] = 1
      bad = 0
      for (i in names) {
        f = base(names[i])
        in_section = addresses[i] >= start && addresses[i] < stop
        if (on_path(f) && !in_section) {
          printf "%s: %s (on the path to the walk) lies outside liveheap_text\n", binary, names[i]
          bad = 1
        } else if (!on_path(f) && in_section) {
          printf "%s: %s lies in liveheap_text but is not on the path to the walk\n", binary, names[i]
          bad = 1
        } else if (f in inside && !in_section) {
          printf "%s: %s is a part of an own function outside liveheap_text\n", binary, names[i]
          bad = 1
        } else if (on_path(f)) {
          count++
        }
      }
      if (count == 0) {
        printf "%s: no function of the path found\n", binary
        bad = 1
      }
      if (!bad) printf "%s: %d own functions, all in liveheap_text\n", binary, count
      exit bad
    }' || status=1
done
exit $status
