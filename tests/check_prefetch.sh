#!/bin/sh
# Every generated file that asks for prefetches must compile to prefetch
# instructions.  gcc counts __builtin_prefetch as free of side effects and
# drops a call to a function that does nothing else, so a prefetch written
# in such a function silently disappears (ATTN_ALWAYS_INLINE in the
# generated code says how the templates avoid it).  For gcc, the objects of
# each such file's build parts that the kernel tests link (KOBJ/preset/NAME/,
# -O2 with OpenMP, each part compiled alone as the build cache does: built by
# make before this runs).  For clang, the objects CLANG_OBJ/clang-NAME.o
# where a folder is given (make test's strict compiles: the presets of
# tests/kernel_sets.lua strict, every preset in make test-full, whole at -O2
# with OpenMP), else every such file compiled whole at -O2 with OpenMP, JOBS
# at a time.  Counts the x86 prefetch instructions; prints PASS or FAIL per
# file and compiler.
#
#   tests/check_prefetch.sh [KOBJ [CLANG_OBJ]]    (default build/obj, none)
set -u
cd "$(dirname "$0")/.." || exit 2
kobj=${1:-build/obj}
clang_obj=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefetches() { objdump -d --no-show-raw-insn "$@" | grep -c "prefetcht[012]"; }
for c in generated/*.c; do
  grep -q '__builtin_prefetch' "$c" || continue
  name=$(basename "$c" .c)
  set -- "$kobj/preset/$name"/*.o
  if [ ! -f "$1" ]; then
    echo "FAIL: gcc $c: no build parts in $kobj/preset/$name (make build/test_kernels builds them)"
  elif [ "$(prefetches "$@")" -gt 0 ]; then
    echo PASS
  else
    echo "FAIL: gcc $c: no prefetch instruction left in its build parts"
  fi
done
if [ -n "$clang_obj" ]; then
  for o in "$clang_obj"/clang-*.o; do
    [ -f "$o" ] || { echo "FAIL: clang: no objects in $clang_obj"; break; }
    c=generated/$(basename "$o" .o | sed 's/^clang-//').c
    grep -q '__builtin_prefetch' "$c" || continue
    if [ "$(prefetches "$o")" -gt 0 ]; then echo PASS
    else echo "FAIL: clang $c: no prefetch instruction left"; fi
  done
  exit 0
fi
# shellcheck disable=SC2016  # $1 and $2 are the inner script's
grep -l '__builtin_prefetch' generated/*.c | xargs -P "${JOBS:-2}" -n 1 sh -c '
  o="$1/$(basename "$2" .c)-clang.o"
  if ! clang -std=c99 -O2 -fopenmp -D_POSIX_C_SOURCE=200809L -Iruntime -Igenerated -c "$2" -o "$o" 2>"$o.log"; then
    echo "FAIL: clang $2 does not compile"; cat "$o.log"
  elif [ "$(objdump -d --no-show-raw-insn "$o" | grep -c "prefetcht[012]")" -gt 0 ]; then
    echo PASS
  else
    echo "FAIL: clang $2: no prefetch instruction left"
  fi' prefetch "$tmp"
