#!/bin/sh
# Runs libFuzzer targets for a bounded time each (make fuzz, make fuzz-long).
#
#   tests/fuzz/run.sh SECONDS DIR TARGET...
#
# DIR/TARGET is the fuzzer.  It starts from the committed seeds in
# tests/fuzz/corpus/TARGET (never written to) plus the inputs earlier runs
# found, kept in DIR/corpus/TARGET.  A crash, a sanitizer report, a leak or a
# timeout stops that target, leaves the input in DIR/artifacts/ and makes
# this script fail.  FUZZ_JOBS (default 2) targets run at the same time.
# Prints one line per target: executions, time, coverage, corpus size.
set -u
cd "$(dirname "$0")/../.." || exit 2

[ $# -ge 3 ] || { echo "usage: tests/fuzz/run.sh SECONDS DIR TARGET..." >&2; exit 2; }
secs=$1; dir=$2; shift 2
jobs=${FUZZ_JOBS:-2}
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$dir/artifacts"

# fuzz TARGET: runs one target, output in DIR/TARGET.log, status in DIR/TARGET.rc
fuzz() {
  t=$1
  case "$t" in
    fuzz_npy) opts="-max_len=4096 -dict=tests/fuzz/npy.dict" ;;
    fuzz_args) opts="-max_len=512" ;;
    *) opts="" ;;
  esac
  mkdir -p "$dir/corpus/$t"
  # shellcheck disable=SC2086  # opts holds several options
  "$dir/$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2560 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$t-" $opts "$dir/corpus/$t" "tests/fuzz/corpus/$t" \
    >"$dir/$t.log" 2>&1
  echo $? >"$dir/$t.rc"
}

running=0
for t in "$@"; do
  [ -x "$dir/$t" ] || { echo "fuzz: $dir/$t is not built" >&2; exit 2; }
  rm -f "$dir/$t.rc"
  fuzz "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
done
wait

failed=0
for t in "$@"; do
  log=$dir/$t.log
  rc=$(cat "$dir/$t.rc" 2>/dev/null || echo 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  corp=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
  if [ "$rc" -ne 0 ]; then
    grep -v '^#[0-9]' "$log" | tail -n 60
    echo "fuzz: $t FAILED after ${runs:-?} executions"
    sed -n 's|.*Test unit written to \(.*\)|fuzz: the input is saved in \1 (replay: '"$dir/$t"' FILE)|p' "$log"
    failed=1
  else
    per=""
    [ -n "$runs" ] && [ -n "$took" ] && [ "$took" -gt 0 ] && per=" ($((runs / took))/s)"
    echo "fuzz: $t: ${runs:-?} executions in ${took:-?} s$per, coverage ${cov:-?} edges, corpus ${corp:-?} inputs"
  fi
done
exit $failed
