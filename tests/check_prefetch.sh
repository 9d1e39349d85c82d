#!/bin/sh
# Every generated file that asks for prefetches must compile to prefetch
# instructions.  gcc counts __builtin_prefetch as free of side effects and
# drops a call to a function that does nothing else, so a prefetch written
# in such a function silently disappears (ATTN_ALWAYS_INLINE in the
# generated code says how the templates avoid it).  Compiles each such file
# whole with gcc and clang at -O2 (with OpenMP, as the build cache does),
# JOBS at a time, and counts the x86 prefetch instructions; prints PASS or
# FAIL per file and compiler.
set -u
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in $(grep -l '__builtin_prefetch' generated/*.c); do
  for cc in gcc clang; do echo "$cc $c"; done
done | xargs -P "${JOBS:-2}" -n 2 sh -c '
  o="$1/$(basename "$3" .c)-$2.o"
  if ! $2 -std=c99 -O2 -fopenmp -D_POSIX_C_SOURCE=200809L -Iruntime -Igenerated -c "$3" -o "$o" 2>"$o.log"; then
    echo "FAIL: $2 $3 does not compile"; cat "$o.log"
  elif [ "$(objdump -d --no-show-raw-insn "$o" | grep -c "prefetcht[012]")" -gt 0 ]; then
    echo PASS
  else
    echo "FAIL: $2 $3: no prefetch instruction left"
  fi' prefetch "$tmp"
