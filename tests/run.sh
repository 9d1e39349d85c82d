#!/bin/sh
# The whole test run (make test).  Each suite prints its own output and adds
# its counts; the last line is the total, "N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 2
JOBS=${JOBS:-2}
LOG=build/test-logs
mkdir -p "$LOG"
# the build cache of the Lua specs that compile through it
# (tests/spec/helper.lua build_env): one for the run, so the runtime and a
# config two specs run are compiled once, and empty at its start
ATTNGEN_TEST_CACHE=$(pwd)/build/test-cache
rm -rf "$ATTNGEN_TEST_CACHE" && mkdir -p "$ATTNGEN_TEST_CACHE" || exit 2
export ATTNGEN_TEST_CACHE
# and the flags it compiles with: -O1 in make test (those specs check the
# CLI; the kernel tests run gcc's -O2 code), the build cache's own in make
# test-full
if [ -n "${TEST_FULL:-}" ]; then ATTNGEN_TEST_CFLAGS=""; else ATTNGEN_TEST_CFLAGS="-O1"; fi
export ATTNGEN_TEST_CFLAGS
rm -f "$LOG/vendor.rc"
total_pass=0
total_fail=0
failed_suites=""

t_run=$(date +%s)
t_suite=$t_run

# the CPU seconds this shell's finished children have used (user + system,
# from /proc: fields 16 and 17 of its stat line, in clock ticks), or 0
# where there is no /proc
cpu_ticks() {
  if [ -r /proc/$$/stat ]; then
    sed -E 's/^.*\) //' /proc/$$/stat | awk '{print $14 + $15}'
  else echo 0; fi
}
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
c_suite=$(cpu_ticks)

# record SUITE PASSED FAILED (with the seconds since the last record, and
# the CPU seconds its processes used: a step whose CPU time is well under
# twice its wall time leaves a core idle)
record() {
  total_pass=$((total_pass + $2))
  total_fail=$((total_fail + $3))
  [ "$3" -gt 0 ] && failed_suites="$failed_suites $1"
  now=$(date +%s)
  c_now=$(cpu_ticks)
  printf '== %-28s %d passed, %d failed (%d s, %d CPU s)\n' "$1" "$2" "$3" $((now - t_suite)) \
    $(((c_now - c_suite) / hz))
  t_suite=$now
  c_suite=$c_now
}

# record_lines SUITE LOGFILE: one pass per "PASS" line, one failure per
# "FAIL: ..." line (the other lines shown when anything failed)
record_lines() {
  pass=$(grep -c '^PASS$' "$2")
  fail=$(grep -c '^FAIL: ' "$2")
  [ "$fail" -eq 0 ] || grep -v '^PASS$' "$2"
  record "$1" "$pass" "$fail"
}

# one check that passes when the command succeeds; output shown on failure
check() {
  name=$1; shift
  if "$@" >"$LOG/$name.log" 2>&1; then record "$name" 1 0
  else cat "$LOG/$name.log"; record "$name" 0 1; fi
}

# busted under one interpreter, in the background: busted_start NAME LUA
# ARGS... starts it (output in its log, exit status in its .rc);
# busted_record NAME, after wait, adds the counts of its summary line
busted_run() { # the same in the foreground
  name=$1; lua=$2; shift 2
  rm -f "$LOG/$name.rc"
  if ! command -v "$lua" >/dev/null 2>&1; then
    echo "missing $lua" >"$LOG/$name.log"; echo 127 >"$LOG/$name.rc"; return
  fi
  "$lua" /usr/bin/busted -o plainTerminal "$@" >"$LOG/$name.log" 2>&1; echo $? >"$LOG/$name.rc"
}
busted_start() {
  busted_run "$@" &
}
# busted_record NAME [LOG...]: the counts of the summary lines of LOGs
# (default: NAME's own log), added up, recorded as suite NAME
busted_record() {
  name=$1; shift
  [ $# -gt 0 ] || set -- "$name"
  ok=0; bad=0
  for part in "$@"; do
    rc=$(cat "$LOG/$part.rc" 2>/dev/null || echo 1)
    summary=$(grep -E '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$LOG/$part.log" | tail -n 1)
    p_ok=$(echo "$summary" | sed -E 's/^([0-9]+) success.*/\1/')
    p_bad=$(echo "$summary" | sed -E 's/.* ([0-9]+) failures? \/ ([0-9]+) errors?.*/\1 \2/' | awk '{print $1 + $2}')
    if [ -z "$summary" ]; then p_ok=0; p_bad=1; fi
    if [ "$rc" -ne 0 ] || [ "$p_bad" -gt 0 ]; then
      cat "$LOG/$part.log"
      [ "$p_bad" -gt 0 ] || p_bad=1
    fi
    ok=$((ok + p_ok)); bad=$((bad + p_bad))
  done
  record "$name" "$ok" "$bad"
}

echo "== lint"
check luacheck luacheck -q generator tests bench

echo "== Lua specs (LuaJIT, Lua 5.1, Lua 5.4), and beside them the vendoring suite"
# LuaJIT's specs in two halves side by side (busted runs one spec, and
# mostly one process, at a time; the build cache's compiles of a kernel are
# the exception): BUSTED_SHARD_A (the CLI's spec, the longest, and tuning)
# and every other spec file, followed by Lua 5.1 and 5.4 (no compiles: the
# slow specs are LuaJIT's)
BUSTED_SHARD_A="cli_spec.lua tune_spec.lua docs_spec.lua"
shard_a=""; shard_b=""
for f in tests/spec/*_spec.lua; do
  case " $BUSTED_SHARD_A " in
    *" ${f##*/} "*) shard_a="$shard_a $f" ;;
    *) shard_b="$shard_b $f" ;;
  esac
done
# shellcheck disable=SC2086  # the lists are file names without blanks
busted_start "busted-luajit-a" luajit $shard_a
# the other half, then Lua 5.1 and 5.4 (no compiles), one after another
# beside the first half, which takes about as long as the three
# shellcheck disable=SC2086
{ busted_run "busted-luajit-b" luajit $shard_b
  busted_run "busted (lua5.1)" lua5.1 --exclude-tags=slow tests/spec
  busted_run "busted (lua5.4)" lua5.4 --exclude-tags=slow tests/spec; } &
# and the vendoring suite (recorded below), whose builds and runs leave
# a core idle a third of the time: beside the specs it fills the gaps
# their two halves leave (its examples' OpenMP threads wait asleep)
{ OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" JOBS=$JOBS tests/vendor_test.sh >"$LOG/vendor.log" 2>&1
  echo $? >"$LOG/vendor.rc"; } &
wait
busted_record "busted (luajit)" "busted-luajit-a" "busted-luajit-b"
busted_record "busted (lua5.1)"
busted_record "busted (lua5.4)"

echo "== generated/ matches a fresh generation"
check generated-fresh tests/check_generated.sh

echo "== presets compile warning-free (clang, x86-64, with OpenMP; gcc, AArch64, without; make test-full: every preset)"
# JOBS compiles at a time; each prints "PASS", or "FAIL: CC FILE" and its messages.
# clang and the AArch64 gcc compile each file whole (clang's objects are
# the prefetch check's, below); x86-64 gcc compiles each build part alone
# (-DATTN_BUILD_PART=K, as the build cache does), as strict, in the kernel
# tests' build below (Makefile: PRESET_PARTS).  Without OpenMP, clang's and
# gcc's x86-64 builds of vendored folders are strict in the vendor suite.
mkdir -p "$LOG/strict"
# make test: the presets that cover every feature (tests/kernel_sets.lua strict); make test-full: all
if [ -n "${TEST_FULL:-}" ]; then
  strict_files=$(ls generated/*.c)
else
  strict_files=$(luajit tests/kernel_sets.lua strict configs/*.lua configs/test/*.lua | sed 's|.*|generated/&.c|')
fi
# shellcheck disable=SC2016  # $1-$3 are the inner script's
for c in $strict_files; do
  for cc in clang aarch64-linux-gnu-gcc; do echo "$cc $c"; done
done | xargs -P "$JOBS" -n 2 sh -c '
  out="$1/strict/$2-$(basename "$3" .c)"
  case $2 in clang) omp=-fopenmp ;; *) omp= ;; esac
  if $2 -std=c99 -Wall -Wextra -Wpedantic -Werror -O2 $omp -D_POSIX_C_SOURCE=200809L -Iruntime -Igenerated \
    -c "$3" -o "$out.o" >"$out.log" 2>&1
  then echo PASS; else echo "FAIL: $2 $3"; cat "$out.log"; fi' strict "$LOG" >"$LOG/strict.log" 2>&1
record_lines "strict compiles" "$LOG/strict.log"

echo "== attngen vendor: the folder builds alone (gcc, clang, make, CMake, C++), vs the reference (run beside the Lua specs)"
rc=$(cat "$LOG/vendor.rc" 2>/dev/null || echo 1)
summary=$(grep -E '^vendor: [0-9]+ passed, [0-9]+ failed$' "$LOG/vendor.log" | tail -n 1)
ok=$(echo "$summary" | sed -E 's/^vendor: ([0-9]+) passed.*/\1/')
bad=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
[ -n "$summary" ] || { ok=0; bad=1; }
if [ "$rc" -ne 0 ] || [ "$bad" -gt 0 ]; then cat "$LOG/vendor.log"; [ "$bad" -gt 0 ] || bad=1; fi
record "vendor" "$ok" "$bad"

# From here on JOBS test processes share the cores, each running kernels on
# two threads: OpenMP's threads wait at their barriers asleep, not spinning
# on a core another process needs (spinning took a quarter of the kernel
# tests' CPU time and a third of the sanitizers').  The Lua specs above run
# one process at a time, and sleeping made the CLI's spec slower (104
# against 85 s).  A value given is kept.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

echo "== kernels against the reference (Criterion)"
if make -s -j"$JOBS" build/test_kernels >"$LOG/build-kernels.log" 2>&1; then
  ./build/test_kernels -j"$JOBS" >"$LOG/kernels.log" 2>&1
  rc=$?
  synth=$(grep 'Synthesis' "$LOG/kernels.log" | tail -n 1)
  ok=$(echo "$synth" | sed -E 's/.*Passing: ([0-9]+).*/\1/')
  bad=$(echo "$synth" | sed -E 's/.*Failing: ([0-9]+) \| Crashing: ([0-9]+).*/\1 \2/' | awk '{print $1 + $2}')
  [ -n "$synth" ] || { ok=0; bad=1; }
  if [ "$rc" -ne 0 ] || [ "$bad" -gt 0 ]; then cat "$LOG/kernels.log"; [ "$bad" -gt 0 ] || bad=1; fi
  tail -n 1 "$LOG/kernels.log"
  record "kernels (x86-64)" "$ok" "$bad"
else
  cat "$LOG/build-kernels.log"; record "kernels (x86-64)" 0 1
fi

echo "== prefetches survive compilation (gcc: the kernel tests' build parts; clang: the strict compiles' objects)"
JOBS=$JOBS tests/check_prefetch.sh build/obj "$LOG/strict" >"$LOG/prefetch.log" 2>&1
record_lines "prefetch instructions" "$LOG/prefetch.log"

echo "== NEON and scalar variants on AArch64 (qemu-user)"
if make -s -j"$JOBS" neon-check >"$LOG/neon.log" 2>&1; then
  n=$(grep -c ': neon: .* 0 failures' "$LOG/neon.log")
  m=$(grep -c ': scalar: .* 0 failures' "$LOG/neon.log")
  echo "  $n configs pass on neon, $m on scalar"
  record "kernels (aarch64, qemu)" $((n + m)) 0
else
  cat "$LOG/neon.log"; record "kernels (aarch64, qemu)" 0 1
fi

# ukernel_suite NAME LOGNAME TARGET RUNNER...: builds TARGET, runs it with
# RUNNER (env: natively); its counts (micro-kernels) from its last line,
# "N passed, N failed"; on failure its FAIL lines and what did not run here
ukernel_suite() {
  name=$1; log=$2; target=$3; shift 3
  if make -s -j"$JOBS" "$target" >"$LOG/build-$log.log" 2>&1; then
    "$@" "$target" >"$LOG/$log.log" 2>&1
    rc=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOG/$log.log" | tail -n 1)
    ok=$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')
    bad=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed$/\1/')
    [ -n "$summary" ] || { ok=0; bad=1; }
    if [ "$rc" -ne 0 ] || [ "$bad" -gt 0 ]; then
      grep -v -e '^ok ' -e 'not built for this architecture' "$LOG/$log.log"; [ "$bad" -gt 0 ] || bad=1
    else
      grep -E '^[a-z0-9]+: [0-9]+ micro-kernels' "$LOG/$log.log" | sed 's/^/  /'
    fi
    record "$name" "$ok" "$bad"
  else
    cat "$LOG/build-$log.log"; record "$name" 0 1
  fi
}

echo "== micro-kernels alone against plain loops (each distinct micro-kernel of the test configs, once)"
ukernel_suite "micro-kernels" ukernels build/ukernel/x86-64/test_ukernels env
missing=""
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "missing:$missing (the AArch64 micro-kernel tests need a cross compiler and qemu-user)"
  record "micro-kernels (aarch64, qemu)" 0 1
else
  ukernel_suite "micro-kernels (aarch64, qemu)" ukernels-aarch64 build/ukernel/aarch64/test_ukernels qemu-aarch64
fi

echo "== examples/decode_loop.c: a serving loop, appending with RoPE, checked step by step"
check decode_loop make -s -j"$JOBS" decode-loop

echo "== concurrency: 16 attngen processes on one cache and one output folder"
check concurrency tests/concurrency.sh

echo "== sanitizers (ASan + UBSan), valgrind, libFuzzer"
check sanitize make -s -j"$JOBS" sanitize && tail -n 1 "$LOG/sanitize.log"
check valgrind make -s -j"$JOBS" valgrind-run && tail -n 1 "$LOG/valgrind.log"
check fuzz make -s -j"$JOBS" fuzz FUZZ_SECONDS=30 && grep '^fuzz: ' "$LOG/fuzz.log"

echo
[ -n "$failed_suites" ] && echo "failed suites:$failed_suites"
echo "($(( $(date +%s) - t_run )) s in all)"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
