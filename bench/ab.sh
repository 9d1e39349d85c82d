#!/bin/sh
# bench/ab.sh - what an option costs, measured by hand on a loaded machine:
# kernels generated from one preset, called in turn in one process
# (bench/kernel_ab.c), one thread, process CPU time.
#
#   bench/ab.sh LQ LK N PRESET [SETTINGS...]
#
# Each SETTINGS is the --set options of one more kernel, as one word (e.g.
# "--set sinks=true"); every kernel also takes $AB_SET (default: the
# AVX-512 variant alone, --set 'isa={"avx512"}').  The kernels are the base
# (the preset with $AB_SET), its identical copy (the control) and one per
# SETTINGS, each called N times with Lq = LQ, Lk = LK.  The folder is
# $AB_DIR (default build/ab).  Examples (docs/benchmarks.md):
#
#   bench/ab.sh 1 32768 100 llama3_8b "--set sinks=true" "--set temperature={scale=0.1,floor=8192}"
#   bench/ab.sh 4096 4096 12 llama3_8b "--set qk_norm={eps=1e-6}"
set -eu
usage() { echo "usage: bench/ab.sh LQ LK N PRESET [SETTINGS...]" >&2; exit 2; }
[ $# -ge 4 ] || usage
lq=$1; lk=$2; n=$3; preset=$4; shift 4
for x in "$lq" "$lk" "$n"; do
  case $x in '' | *[!0-9]*) usage ;; esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${AB_DIR:-$root/build/ab}
common=${AB_SET:-"--set isa={\"avx512\"}"}
rm -rf "$dir"
mkdir -p "$dir"

# gen NAME SETTINGS: the preset's kernel named NAME with $common and SETTINGS
gen() {
  # shellcheck disable=SC2086  # the settings are words
  "$root/bin/attngen" generate -q "$preset" --set "name=\"$1\"" $common $2 -o "$dir"
}
# the C string of a label (backslashes and quotes escaped)
cstr() { printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g')"; }

list="X(ab_base, \"base\") X(ab_copy, \"base (copy)\")"
gen ab_base ""
gen ab_copy ""
i=0
for s in "$@"; do
  i=$((i + 1))
  gen "ab_opt$i" "$s"
  list="$list X(ab_opt$i, $(cstr "$s"))"
done
{
  echo "/* written by bench/ab.sh: the kernels bench/kernel_ab.c times */"
  for f in "$dir"/ab_*.h; do echo "#include \"$(basename "$f")\""; done
  echo "#define AB_KERNELS $list"
} >"$dir/kernel_ab_list.h"
"${CC:-cc}" -std=c99 -O2 -fopenmp -I"$root/runtime" -I"$dir" "$root/bench/kernel_ab.c" "$dir"/ab_*.c \
  "$root/runtime/attn_runtime.c" -o "$dir/kernel_ab" -lm
OMP_NUM_THREADS=1 "$dir/kernel_ab" "$lq" "$lk" "$n"
