#!/bin/sh
# tests/vendor_test.sh - `attngen vendor` end to end.
#
# Vendors two configs into a temporary folder, copies only that folder
# elsewhere and builds it there five ways, each with
# -std=c99 -Wall -Wextra -Wpedantic -Werror:
#   gcc    `gcc -O2 -c *.c` in the folder (no OpenMP)
#   make   attngen.mk included by a Makefile, gcc -fopenmp
#   clang  `clang -O2 -c *.c` in the folder (no OpenMP)
#   cmake  CMakeLists.txt through add_subdirectory, clang with OpenMP
#   parts  as gcc, each kernel's file compiled in its build parts
# Then: the example runs (same checksum with and without OpenMP,
# ATTNGEN_ISA honoured); tests/vendor_check.c, linked with each build and
# with runtime/attn_reference.c from the repository, compares both kernels
# with the reference; a C++11 program includes attngen.h and calls every
# kernel (g++ and clang++); nm finds only attn_<name>_* in each kernel
# object, only attn_* in the runtime and no symbol twice; the README's C
# example compiles.  Linear, additive and luong kernels (their own args and
# examples) and a kernel with a RoPE table are vendored and built on their
# own at the end.  The command's own behaviour: deterministic output,
# errors (unknown preset, duplicate or reserved names, a foreign non-empty
# folder, a user's file in the way) that change nothing, and re-vendoring
# that replaces only the files it wrote.
#
# Prints "vendor: N passed, N failed"; exits 1 when something failed.
# The builds run two at a time (JOBS=1: one after another).
#
# shellcheck disable=SC2086,SC2046,SC2010,SC2012,SC2016
# (flag, config and object lists are split into words on purpose, the file
# names are plain, and the sed scripts hold backquotes, not expansions)
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
ATTNGEN="$ROOT/bin/attngen"
STRICT="-std=c99 -Wall -Wextra -Wpedantic -Werror"
# two of the configs that compile fastest (about 1.3 s each per compiler; a
# preset takes 4-15 s), both with padding, so that seqlens_k is exercised,
# and stored as bf16 with bf16 products, so that the folder holds the
# storage-type conversions and the avx512bf16 variant, and the example
# converts its inputs
K1=t_d3_gqa_causal # GQA, causal, head dim 3
K2=t_d1            # MHA, no mask, head dim 1
CONFIGS="configs/test/$K1.lua configs/test/$K2.lua --set padding=true --set dtype=\"bf16\" --set matmul=\"bf16\""

# tiles from the heuristic, not from this machine's tuning file
ATTNGEN_TUNE_DB=none
export ATTNGEN_TUNE_DB

T=$(mktemp -d "${TMPDIR:-/tmp}/attngen-vendor-test.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
pass=0
fail=0

# check NAME COMMAND...: passes when COMMAND succeeds; shows its output when not
check() {
  check_name=$1
  shift
  if "$@" >"$T/check.log" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $check_name"
    tail -n 40 "$T/check.log" | sed 's/^/    /'
  fi
}

# usage_error LOG: the run exited 2 with one line on stderr (LOG holds "rc" then stderr)
usage_error() {
  rc=$(head -n 1 "$1")
  lines=$(tail -n +2 "$1" | wc -l)
  tail -n +2 "$1"
  [ "$rc" = 2 ] && [ "$lines" -eq 1 ] && tail -n +2 "$1" | grep -q '^attngen: '
}

# vendor_rc LOG ARGS...: runs attngen vendor, writes its exit code and stderr to LOG
vendor_rc() {
  log=$1
  shift
  "$ATTNGEN" vendor "$@" >/dev/null 2>"$log.err"
  echo $? >"$log"
  cat "$log.err" >>"$log"
}

# snapshot DIR: every path under DIR with its checksum (to prove nothing changed)
snapshot() {
  (cd "$1" && find . -print | sort && find . -type f -exec md5sum {} + | sort)
}

# unchanged DIR BEFORE: DIR's snapshot is still BEFORE
unchanged() {
  snapshot "$1" | diff "$2" -
}

# only_entry DIR NAME: DIR holds NAME and nothing else (no temporary folder left)
only_entry() {
  ls -A "$1"
  [ "$(ls -A "$1")" = "$2" ]
}

# ---- vendoring ------------------------------------------------------------

check "vendor two configs" "$ATTNGEN" vendor -q $CONFIGS -o "$T/out/attngen"
expected=".attngen-vendor CMakeLists.txt README.md attn_cpu_profiles.h attn_runtime.c attn_runtime.h attn_vendored.c attngen.h attngen.mk example.c
$K1.c $K1.h $K2.c $K2.h"
files_are() { # DIR NAMES: the folder holds exactly these files
  want=$(echo "$2" | tr ' ' '\n' | sort | tr '\n' ' ')
  got=$(ls -A "$1" | sort | tr '\n' ' ')
  echo "want: $want"
  echo "got:  $got"
  [ "$want" = "$got" ]
}
check "the folder holds the kernels, runtime, attngen.h, build files, README, example" \
  files_are "$T/out/attngen" "$expected"
check "the runtime is runtime/attn_runtime.{h,c} and attn_cpu_profiles.h verbatim" \
  sh -c "cmp runtime/attn_runtime.h '$T/out/attngen/attn_runtime.h' && cmp runtime/attn_runtime.c '$T/out/attngen/attn_runtime.c' &&
    cmp runtime/attn_cpu_profiles.h '$T/out/attngen/attn_cpu_profiles.h'"
check "no reference, npy or verify code in the folder" \
  sh -c "! grep -l 'attn_reference\|attn_npy\|attn_verify' '$T/out/attngen'/*.[ch]"
vendor_again() { "$ATTNGEN" vendor -q $CONFIGS -o "$T/again/attngen" && diff -r "$T/out/attngen" "$T/again/attngen"; }
check "vendoring is deterministic (a second folder is identical)" vendor_again
documented() { # every status of attn_runtime.h is documented in attngen.h
  statuses=$(sed -n '/^typedef enum attn_status {/,/^} attn_status;/p' runtime/attn_runtime.h |
    grep -o '^ *ATTN_[A-Z_]*' | tr -d ' ')
  [ -n "$statuses" ] || { echo "no attn_status values found in attn_runtime.h"; return 1; }
  for s in $statuses; do
    grep -q "^ \*   $s " "$T/out/attngen/attngen.h" || { echo "attngen.h does not document $s"; return 1; }
  done
  grep -q ATTNGEN_ISA "$T/out/attngen/attngen.h"
}
check "attngen.h documents every status and ATTNGEN_ISA" documented

# only the folder travels: the builds below see nothing of the repository
mkdir -p "$T/elsewhere"
cp -R "$T/out/attngen" "$T/elsewhere/attngen"
V="$T/elsewhere/attngen"

# ---- the four builds, JOBS at a time, while the command's errors are checked

# build_direct NAME CC FLAGS: `CC -O2 -c *.c` in a copy of the folder, then the example
build_direct() {
  cp -R "$V" "$T/$1" && cd "$T/$1" &&
    $2 $STRICT -O2 $3 -c ./*.c &&
    $2 $3 -o example ./*.o -lm
}

# build_parts: as build_direct gcc, but each kernel's file in its build parts
# (-DATTN_BUILD_PART=K, one object each), as the comment above its dispatch says
build_parts() {
  cp -R "$V" "$T/parts" && cd "$T/parts" || return 1
  for c in ./*.c; do
    parts=$("$ROOT/scripts/build_parts.sh" "$c")
    if [ -z "$parts" ]; then
      gcc $STRICT -O2 -c "$c" || return 1
    else
      for k in $parts; do gcc $STRICT -O2 -DATTN_BUILD_PART="$k" -c "$c" -o "${c%.c}-part$k.o" || return 1; done
    fi
  done
  gcc -o example ./*.o -lm
}

build_make() {
  mkdir -p "$T/make" && cat >"$T/make/Makefile" <<EOF
ATTNGEN_BUILD := build
include $V/attngen.mk
ATTNGEN_CFLAGS += -Wall -Wextra -Wpedantic -Werror

all: example

example: example.o \$(ATTNGEN_LIB)
	\$(CC) -o \$@ example.o \$(ATTNGEN_LIB) \$(ATTNGEN_LDLIBS)

example.o: \$(ATTNGEN_DIR)/example.c \$(ATTNGEN_HDRS)
	\$(CC) \$(ATTNGEN_CFLAGS) \$(ATTNGEN_CPPFLAGS) -c \$< -o \$@
EOF
  make -C "$T/make" CC=gcc
}

build_cmake() {
  mkdir -p "$T/cmake" && cat >"$T/cmake/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.10)
project(vendor_test C)
add_subdirectory($V attngen)
EOF
  cd "$T/cmake" &&
    CC=clang cmake -S . -B build -DATTNGEN_EXAMPLE=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
      -DCMAKE_C_FLAGS="-Wall -Wextra -Wpedantic -Werror" &&
    cmake --build build
}

# run_build NAME FUNCTION ARGS...: writes NAME.log and NAME.rc
run_build() {
  rb_name=$1
  shift
  ("$@") >"$T/$rb_name.log" 2>&1
  echo $? >"$T/$rb_name.rc"
}

if [ "${JOBS:-2}" -ge 2 ]; then
  (run_build gcc build_direct gcc gcc "" && run_build make build_make && run_build parts build_parts) &
  (run_build clang build_direct clang clang "" && run_build cmake build_cmake) &
else
  (run_build gcc build_direct gcc gcc "" && run_build make build_make && run_build parts build_parts &&
    run_build clang build_direct clang clang "" && run_build cmake build_cmake) &
fi

# ---- errors change nothing (checked while the builds run) -----------------

vendor_rc "$T/e1" no_such_preset -o "$T/e1dir"
check "unknown preset: exit 2, one line" usage_error "$T/e1"
check "unknown preset: no folder created" sh -c "! test -e '$T/e1dir'"

vendor_rc "$T/e2" "configs/test/$K1.lua" "configs/test/$K1.lua" -o "$T/e2dir"
check "a config name used twice: exit 2, one line" usage_error "$T/e2"

vendor_rc "$T/e3" "configs/test/$K1.lua" --set 'name="attngen"' -o "$T/e3dir"
check "a config named like the umbrella header: exit 2, one line" usage_error "$T/e3"

F="$T/fp/foreign"
mkdir -p "$F/sub"
echo "my notes" >"$F/notes.txt"
echo "data" >"$F/sub/data.bin"
snapshot "$F" >"$T/foreign.before"
vendor_rc "$T/e4" "configs/test/$K1.lua" -o "$F"
check "a non-empty folder that is not a vendor output: exit 2, one line" usage_error "$T/e4"
check "a non-empty foreign folder: untouched" unchanged "$F" "$T/foreign.before"
check "a non-empty foreign folder: nothing written next to it" only_entry "$T/fp" foreign

mkdir -p "$T/empty/attngen"
check "an empty folder: vendored into" \
  sh -c "'$ATTNGEN' vendor -q configs/test/$K1.lua -o '$T/empty/attngen' && test -s '$T/empty/attngen/$K1.c'"
check "an empty folder: nothing left next to it" only_entry "$T/empty" attngen

touch "$T/plainfile"
vendor_rc "$T/e5" "configs/test/$K1.lua" -o "$T/plainfile"
check "-o names a file: exit 2, one line" usage_error "$T/e5"

# re-vendoring: a previous output with a file and a folder of the user's
R="$T/re/attngen"
"$ATTNGEN" vendor -q $CONFIGS -o "$R"
echo "local build notes" >"$R/NOTES.txt"
mkdir -p "$R/build" && echo "object" >"$R/build/x.o"
vendor_rc "$T/e6" "configs/test/$K1.lua" -o "$R"
check "re-vendoring fewer configs: exit 0" sh -c "cat '$T/e6'; [ \"\$(head -n 1 '$T/e6')\" = 0 ]"
check "re-vendoring: the dropped kernel's files are gone" sh -c "! test -e '$R/$K2.c' && ! test -e '$R/$K2.h'"
check "re-vendoring: the user's file and folder are kept" \
  sh -c "[ \"\$(cat '$R/NOTES.txt')\" = 'local build notes' ] && [ \"\$(cat '$R/build/x.o')\" = object ]"
check "re-vendoring: the marker lists only the new files" \
  sh -c "grep -qx '$K1.c' '$R/.attngen-vendor' && ! grep -q '^$K2\.' '$R/.attngen-vendor' && ! grep -q NOTES '$R/.attngen-vendor'"
check "re-vendoring: nothing left next to the folder" only_entry "$T/re" attngen
check "re-vendoring the same: 'unchanged'" \
  sh -c "'$ATTNGEN' vendor configs/test/$K1.lua -o '$R' | grep -qx 'unchanged $R'"
echo "my own kernel" >"$R/$K2.c"
snapshot "$R" >"$T/re.before"
vendor_rc "$T/e7" $CONFIGS -o "$R"
check "a user's file where a vendored one would go: exit 2, one line" usage_error "$T/e7"
check "a user's file where a vendored one would go: nothing changed" unchanged "$R" "$T/re.before"
check "a user's file where a vendored one would go: nothing written next to the folder" \
  only_entry "$T/re" attngen

wait

# ---- the builds -------------------------------------------------------------

build_ok() { cat "$T/$1.log"; [ "$(cat "$T/$1.rc" 2>/dev/null)" = 0 ]; }
check "gcc: cc -O2 -c *.c, strict, no OpenMP" build_ok gcc
check "gcc -fopenmp through attngen.mk, strict" build_ok make
check "clang: cc -O2 -c *.c, strict, no OpenMP" build_ok clang
check "clang with OpenMP through CMakeLists.txt, strict" build_ok cmake
check "gcc: each kernel in its build parts (-DATTN_BUILD_PART), strict" build_ok parts
cmake_flags() { # the kernels compile as C99, at -O2, with OpenMP
  line=$(grep "\"command\".*/$K1\.c\"" "$T/cmake/build/compile_commands.json")
  echo "$line"
  for flag in -std=c99 -O2 -fopenmp; do
    echo "$line" | grep -q -- " ${flag}[ =]" || { echo "no $flag"; return 1; }
  done
}
check "CMake: the kernels compile as C99, at -O2, with OpenMP" cmake_flags

# the example: a checksum, the same without and with OpenMP
example_line() { "$@" | grep 'checksum' | grep -v -i nan; }
check "example runs (gcc)" example_line "$T/gcc/example"
check "example: same output with and without OpenMP (gcc, make)" \
  sh -c "[ \"\$('$T/gcc/example')\" = \"\$('$T/make/example')\" ] && '$T/gcc/example'"
check "example: same output with and without OpenMP (clang, cmake)" \
  sh -c "[ \"\$('$T/clang/example')\" = \"\$('$T/cmake/build/attngen/attngen_example')\" ] && '$T/clang/example'"
check "example: the same output from the kernels built in parts (gcc)" \
  sh -c "[ \"\$('$T/gcc/example')\" = \"\$('$T/parts/example')\" ] && '$T/parts/example'"
check "example: ATTNGEN_ISA=scalar runs the scalar variant" \
  sh -c "ATTNGEN_ISA=scalar '$T/gcc/example' | grep -q 'isa scalar:'"
check "example: an unknown ATTNGEN_ISA is a status, not a crash" \
  sh -c "ATTNGEN_ISA=sse9 '$T/gcc/example'; [ \$? = 1 ] && ATTNGEN_ISA=sse9 '$T/gcc/example' 2>&1 | grep -q ATTNGEN_ISA"

# symbols: kernels define only attn_<name>_*, the runtime only attn_*, nothing twice
symbols_ok() { # DIR
  all=""
  for o in "$1"/*.o; do
    b=$(basename "$o" .o)
    [ "$b" = example ] && continue
    syms=$(nm -g --defined-only "$o" | awk '{print $3}')
    [ -n "$syms" ] || { echo "$o defines nothing"; return 1; }
    if [ "$b" = attn_runtime ]; then prefix=attn_; elif [ "$b" = attn_vendored ]; then prefix=attn_vendored_; else prefix="attn_${b}_"; fi
    bad=$(echo "$syms" | grep -v "^$prefix")
    [ -z "$bad" ] || { echo "$o defines symbols outside $prefix*: $bad"; return 1; }
    all="$all
$syms"
  done
  dup=$(echo "$all" | grep . | sort | uniq -d)
  [ -z "$dup" ] || { echo "defined twice: $dup"; return 1; }
  echo "$all" | grep -c .
}
check "nm (gcc): kernels attn_<name>_* only, runtime attn_* only, no duplicates" symbols_ok "$T/gcc"
check "nm (clang): kernels attn_<name>_* only, runtime attn_* only, no duplicates" symbols_ok "$T/clang"

# the kernels against the reference, with every build's objects
for cc in gcc clang; do
  mkdir -p "$T/check-$cc"
  check "$cc: vendor_check.c and the reference compile against the folder" \
    sh -c "cd '$T/check-$cc' && $cc $STRICT -O2 -I'$V' -I'$ROOT/runtime' -c '$ROOT/tests/vendor_check.c' '$ROOT/runtime/attn_reference.c'"
done
kernel_objs() { ls "$1"/*.o | grep -v '/example\.o$'; }
run_check() { # NAME CC LDFLAGS OBJECTS...
  rc_name=$1 rc_cc=$2 rc_ldflags=$3
  shift 3
  $rc_cc -o "$T/check-$rc_name.bin" "$T/check-$rc_cc/vendor_check.o" "$T/check-$rc_cc/attn_reference.o" \
    "$@" $rc_ldflags -lm && "$T/check-$rc_name.bin"
}
check "both kernels vs the reference (gcc build)" run_check gcc gcc "" $(kernel_objs "$T/gcc")
check "both kernels vs the reference (make build, OpenMP)" run_check make gcc -fopenmp "$T/make/build/libattngen.a"
check "both kernels vs the reference (clang build)" run_check clang clang "" $(kernel_objs "$T/clang")
check "both kernels vs the reference (cmake build, OpenMP)" \
  run_check cmake clang -fopenmp "$T/cmake/build/attngen/libattngen.a"

# a C++ program includes attngen.h and calls every kernel
cat >"$T/caller.cpp" <<'EOF'
#include "attngen.h"

#include <cmath>
#include <cstdio>
#include <vector>

static int call(const attn_kernel &kern)
{
    const attn_spec &s = kern.spec;
    const int64_t b = 2, lq = 5, lk = 9;
    std::vector<float> q(b * lq * s.heads_q * s.head_dim, 0.5f);
    std::vector<float> k(b * lk * s.heads_kv * s.head_dim, 0.25f);
    std::vector<float> v(b * lk * s.heads_kv * s.head_dim_v, 1.0f);
    std::vector<float> o(b * lq * s.heads_q * s.head_dim_v, 0.0f);
    std::vector<int32_t> seqlens(b, static_cast<int32_t>(lk));
    std::vector<float> bias(lq * lk, 0.0f);
    std::vector<uint8_t> keep(lq * lk, 1);
    attn_args a = attn_args();
    a.batch = b;
    a.seq_q = lq;
    a.seq_k = lk;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.o = o.data();
    attn_args_set_contiguous(&a, &s);
    a.seqlens_k = seqlens.data();
    if (s.mask == ATTN_MASK_BOOL)
        a.mask = keep.data();
    else if (s.mask == ATTN_MASK_BIAS)
        a.mask = bias.data();
    a.mask_stride[0] = a.mask_stride[1] = 0; // one [Lq][Lk] mask for all
    const attn_status st = kern.fwd(&a);
    if (st != ATTN_OK) {
        std::printf("%s: %s\n", s.name, attn_status_string(st));
        return 1;
    }
    // every key has the same value row of ones: O is 1 wherever a key is visible
    std::printf("%s: O[0] = %g\n", s.name, static_cast<double>(o[0]));
    return std::fabs(o[0] - 1.0f) < 1e-5f ? 0 : 1;
}

int main()
{
    int failures = 0;
#define CALL(name) failures += call(attn_##name##_kernel); \
    failures += attn_##name##_fwd(nullptr) == ATTN_ERR_NULL_ARG ? 0 : 1;
    ATTNGEN_FOREACH_KERNEL(CALL)
#undef CALL
    return failures == 0 ? 0 : 1;
}
EOF
cxx_caller() { # CXX OBJDIR
  $1 -std=c++11 -Wall -Wextra -Wpedantic -Werror -I"$V" -c "$T/caller.cpp" -o "$T/caller-$1.o" &&
    $1 -o "$T/caller-$1" "$T/caller-$1.o" $(kernel_objs "$2") -lm &&
    "$T/caller-$1"
}
check "C++11 (g++): include attngen.h, call every kernel" cxx_caller g++ "$T/gcc"
check "C++11 (clang++): include attngen.h, call every kernel" cxx_caller clang++ "$T/clang"

# a program that knows its model's shape only at run time looks its kernel up
# (attn_vendored_find), then calls it on one decode step with a workspace of its own
cat >"$T/lookup.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngen.h"

static int miss(int hq, int hkv, int d, int dv, int dtype, const char *want)
{
    const char *why = NULL;
    const attn_kernel *k = attn_vendored_find(hq, hkv, d, dv, dtype, &why);
    printf("%d/%d/%d/%d: %s\n", hq, hkv, d, dv, why ? why : "(no reason)");
    return k == NULL && why != NULL && strstr(why, want) != NULL ? 0 : 1;
}

int main(void)
{
    const char *why = "unset";
    const attn_kernel *k = attn_vendored_find(4, 2, 3, 3, -1, &why);
    uint16_t q[4 * 3] = { 0 }, kv[5 * 2 * 3] = { 0 }, o[4 * 3];
    int32_t seqlens[1] = { 5 };
    attn_args a;
    size_t n;
    void *ws;
    int failures = 0;
    if (k != &attn_K1_kernel || why != NULL) return 1;
    if (attn_vendored_find(2, 2, 1, 1, ATTN_DTYPE_BF16, NULL) != &attn_K2_kernel) return 1;
    if (attn_vendored_kernels[1] != &attn_K2_kernel || ATTNGEN_KERNEL_COUNT != 2) return 1;
    failures += miss(16, 4, 64, 64, -1, "head counts");
    failures += miss(4, 2, 64, 64, -1, "head_dim");
    failures += miss(4, 2, 3, 5, -1, "head_dim_v");
    failures += miss(4, 2, 3, 3, ATTN_DTYPE_F32, "stores K and V");
    memset(&a, 0, sizeof a);
    a.batch = 1, a.seq_q = 1, a.seq_k = 5, a.q = q, a.k = kv, a.v = kv, a.o = o, a.seqlens_k = seqlens;
    attn_args_set_contiguous(&a, &k->spec);
    a.threads = 2;
    n = k->workspace_size(1, 1, 5, 2);
    ws = malloc(n);
    a.workspace = ws, a.workspace_bytes = n;
    if (n == 0 || ws == NULL || k->fwd(&a) != ATTN_OK) failures++;
    a.workspace_bytes = n - 1;
    if (k->fwd(&a) != ATTN_ERR_WORKSPACE) failures++;
    free(ws);
    printf("%s found, %d failures\n", k->spec.name, failures);
    return failures == 0 ? 0 : 1;
}
EOF
sed -i "s/attn_K1_kernel/attn_${K1}_kernel/g; s/attn_K2_kernel/attn_${K2}_kernel/g" "$T/lookup.c"
lookup() { # CC OBJDIR
  $1 $STRICT -I"$V" -c "$T/lookup.c" -o "$T/lookup-$1.o" &&
    $1 -o "$T/lookup-$1" "$T/lookup-$1.o" $(kernel_objs "$2") -lm &&
    "$T/lookup-$1"
}
check "attn_vendored_find (plain cc): a run-time shape finds its kernel, or NULL and why" lookup gcc "$T/gcc"

# the README's C example compiles
sed -n '/^```c$/,/^```$/p' "$V/README.md" | sed '1d;$d' >"$T/readme_example.c"
check "the README's C example compiles (gcc, strict)" \
  sh -c "test -s '$T/readme_example.c' && gcc $STRICT -I'$V' -fsyntax-only '$T/readme_example.c'"

# the example and README for kernels with padding and a mask compile too
"$ATTNGEN" vendor -q configs/test/t_everything.lua configs/test/t_bool_mask.lua -o "$T/masks/bias" &&
  "$ATTNGEN" vendor -q configs/test/t_bool_mask.lua -o "$T/masks/bool"
for m in bias bool; do
  sed -n '/^```c$/,/^```$/p' "$T/masks/$m/README.md" | sed '1d;$d' >"$T/masks/readme_$m.c"
  for cc in gcc clang; do
    check "$m mask: example.c and the README's example compile ($cc, strict)" \
      sh -c "$cc $STRICT -fsyntax-only '$T/masks/$m/example.c' && $cc $STRICT -I'$T/masks/$m' -fsyntax-only '$T/masks/readme_$m.c'"
  done
done

# linear attention (its own family: no LSE, a running state): the folder
# builds strict, its example runs and prints a checksum, the README's
# example compiles
"$ATTNGEN" vendor -q configs/test/t_linear_state.lua configs/test/t_linear_f16.lua -o "$T/linear"
linear_example() ( # a subshell: the cd stays in it
  cd "$T/linear" && gcc $STRICT -O2 -c ./*.c && gcc -o example ./*.o -lm && example_line ./example &&
    sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' >readme_example.c &&
    gcc $STRICT -I. -fsyntax-only readme_example.c
)
check "linear attention: the folder builds strict, the example runs, the README's example compiles" linear_example

# additive and luong attention (attn_classic_args: one head, decoder and
# encoder states, the parameters by name): an additive kernel with bias,
# padding and a mask (the example's and the README's kernel) next to a luong
# concat one builds strict with gcc and clang, its example runs (the same
# checksum with and without OpenMP, ATTNGEN_ISA honoured), the README's
# example compiles; a luong general kernel's example and README too
"$ATTNGEN" vendor -q configs/test/t_additive_bias_mask.lua configs/test/t_luong_concat.lua -o "$T/classic" &&
  "$ATTNGEN" vendor -q configs/test/t_luong_general.lua -o "$T/classic_general"
classic_example() ( # CC; a subshell: the cd stays in it
  rm -rf "$T/classic-$1" && cp -R "$T/classic" "$T/classic-$1" && cd "$T/classic-$1" &&
    $1 $STRICT -O2 -c ./*.c && $1 -o example ./*.o -lm && example_line ./example &&
    $1 $STRICT -O2 -fopenmp -c ./*.c && $1 -fopenmp -o example_omp ./*.o -lm &&
    [ "$(./example)" = "$(./example_omp)" ] && ATTNGEN_ISA=scalar ./example | grep -q 'isa scalar:' &&
    sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' >readme_example.c &&
    $1 $STRICT -I. -fsyntax-only readme_example.c
)
check "additive and luong attention: the folder builds strict (gcc), the example runs, the README's example compiles" \
  classic_example gcc
check "additive and luong attention: the folder builds strict (clang), the example runs, the README's example compiles" \
  classic_example clang
classic_general() ( # a subshell: the cd stays in it
  cd "$T/classic_general" && gcc $STRICT -O2 -c ./*.c && gcc -o example ./*.o -lm && example_line ./example &&
    sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' >readme_example.c &&
    gcc $STRICT -I. -fsyntax-only readme_example.c
)
check "luong general: the folder builds strict, the example runs, the README's example compiles" classic_general

# rope = {table = true}: the example passes its cos / sin table (the angles
# p theta^(-2m/dim)), so its call returns ATTN_OK and prints a checksum
"$ATTNGEN" vendor -q configs/test/t_top_left.lua -o "$T/rope_table"
rope_table_example() ( # a subshell: the cd stays in it
  cd "$T/rope_table" && gcc $STRICT -O1 -c ./*.c && gcc -o example ./*.o -lm && example_line ./example
)
check "rope table: the folder builds strict, the example passes its table and runs" rope_table_example

echo "vendor: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
