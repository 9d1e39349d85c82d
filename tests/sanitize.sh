#!/bin/sh
# Runs the sanitizer and valgrind checks the Makefile builds (make sanitize,
# make valgrind-run).  Each mode prints one line per check and exits non-zero
# when one fails (an ASan/UBSan/LSan report makes the program exit non-zero).
#
#   tests/sanitize.sh check BIN NAME RESULTS       the check tool, --quick, every
#                                                  ISA variant this CPU runs
#   tests/sanitize.sh run BIN NAME RESULTS NPY_TOOL
#                                                  the run tool on .npy inputs, per ISA
#   tests/sanitize.sh summary RESULTS NAME...      totals of the above
#   tests/sanitize.sh valgrind DIR NAME...         DIR/NAME_run under valgrind memcheck
# shellcheck disable=SC2015,SC2086  # a && b || die; word splitting of shapes is meant
set -u
cd "$(dirname "$0")/.." || exit 2

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
GEN_TEST=build/gen-test

die() { echo "sanitize: $*" >&2; exit 1; }

# The ISA variants this CPU runs, best first (as the runtime detects them).
cpu_isas() {
  flags=$(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null)
  isas=""
  case " $flags " in *" avx512f "*) isas="avx512" ;; esac
  case " $flags " in *" avx2 "*) case " $flags " in *" fma "*) isas="$isas avx2" ;; esac ;; esac
  echo "$isas scalar"
}

# config value KEY of kernel NAME, from its generated header's config comment
spec_value() {
  hdr=generated/$1.h
  [ -f "$hdr" ] || hdr=$GEN_TEST/$1.h
  sed -n "s/^ \*   $2 = \"*\([^\",]*\)\"*,\$/\1/p" "$hdr" | head -n 1
}

# the rows of config $1's relative position table (rel_bias), or nothing:
# its spec's rel_buckets (T5's buckets, or 2k + 1 clipped distances)
rel_rows() {
  src=generated/$1.c
  [ -f "$src" ] || src=$GEN_TEST/$1.c
  sed -n 's/^ *\.rel_buckets = \([0-9]*\),$/\1/p' "$src" | head -n 1
}

# elapsed seconds since $1 (date +%s)
since() { echo $(( $(date +%s) - $1 )); }

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in

check)
  bin=$1; name=$2; results=$3
  mkdir -p "$results"
  rm -f "$results/$name.check"
  t0=$(date +%s)
  log=$results/$name.check.log
  if ! "$bin" --quick >"$log" 2>&1; then
    sed "s/^/$name: /" "$log"
    die "$name: the check tool failed under ASan+UBSan (log: $log)"
  fi
  n=$(grep -c ': [0-9]* cases, .* 0 failures$' "$log")
  [ "$n" -gt 0 ] || { cat "$log"; die "$name: no ISA variant was checked"; }
  isas=$(sed -n 's/^\([a-z0-9]*\): [0-9]* cases.*/\1/p' "$log" | tr '\n' ' ' | sed 's/ $//')
  echo "$n" >"$results/$name.check"
  echo "sanitize: $name: check --quick passed on $n ISA variants ($isas) in $(since "$t0") s"
  ;;

run)
  bin=$1; name=$2; results=$3; npy=$4
  mkdir -p "$results"
  rm -f "$results/run-$name.check"
  t0=$(date +%s)
  hq=$(spec_value "$name" heads_q); hkv=$(spec_value "$name" heads_kv)
  d=$(spec_value "$name" head_dim); dv=$(spec_value "$name" head_dim_v)
  padding=$(spec_value "$name" padding); mask=$(spec_value "$name" mask)
  sinks=$(spec_value "$name" sinks) # "true", or empty: the banner echoes it only when set
  rel=$(rel_rows "$name")
  [ -n "$hq" ] && [ -n "$hkv" ] && [ -n "$d" ] && [ -n "$dv" ] && [ -n "$padding" ] \
    && [ -n "$mask" ] || die "$name: cannot read the config from its generated header"
  dir=$results/run-$name
  rm -rf "$dir"; mkdir -p "$dir"
  log=$dir/log
  : >"$log"
  cases=0; extra2=""
  # a prefill (batch 2, 4-D, a [B][Hq][Lq][Lk] mask) and a decode step
  # (3-D, Lq 1, a [Lq][Lk] mask)
  for shape in "2 19 37" "1 1 300"; do
    set -- $shape
    b=$1; lq=$2; lk=$3
    if [ "$b" -gt 1 ]; then
      qs="$b $lq $hq $d"; ks="$b $lk $hkv $d"; vs="$b $lk $hkv $dv"; ms="$b $hq $lq $lk"
    else
      qs="$lq $hq $d"; ks="$lk $hkv $d"; vs="$lk $hkv $dv"; ms="$lq $lk"
    fi
    in="$dir/b$b"
    "$npy" random "$in-q.npy" f32 1 $qs >>"$log" 2>&1 &&
      "$npy" random "$in-k.npy" f32 2 $ks >>"$log" 2>&1 &&
      "$npy" random "$in-v.npy" f64 3 $vs >>"$log" 2>&1 ||
      { cat "$log"; die "$name: npy_tool failed"; }
    extra=""
    if [ "$padding" = true ]; then
      if [ "$b" -gt 1 ]; then "$npy" ints "$in-s.npy" "$lk" $((lk / 2)) >>"$log" 2>&1
      else "$npy" ints "$in-s.npy" $((lk - 7)) >>"$log" 2>&1; fi || die "$name: npy_tool failed"
      extra="--seqlens-k $in-s.npy"
    fi
    case "$mask" in
      bool) "$npy" random "$in-m.npy" b1 4 $ms >>"$log" 2>&1; extra="$extra --mask $in-m.npy" ;;
      bias) "$npy" random "$in-m.npy" f32 4 $ms >>"$log" 2>&1; extra="$extra --mask $in-m.npy" ;;
    esac
    if [ "$sinks" = true ]; then
      "$npy" random "$in-sk.npy" f32 5 "$hq" >>"$log" 2>&1 || die "$name: npy_tool failed"
      extra="$extra --sinks $in-sk.npy"
    fi
    if [ -n "$rel" ]; then
      "$npy" random "$in-rt.npy" f32 6 "$rel" "$hq" >>"$log" 2>&1 || die "$name: npy_tool failed"
      extra="$extra --rel-table $in-rt.npy"
    fi
    io="--q $in-q.npy --k $in-k.npy --v $in-v.npy $extra"
    [ "$b" -gt 1 ] && extra2=$extra
    # shellcheck disable=SC2086
    "$bin" $io -o "$in-ref.npy" --lse "$in-ref-lse.npy" --reference >>"$log" 2>&1 ||
      { cat "$log"; die "$name: run --reference failed (B=$b Lq=$lq Lk=$lk)"; }
    for isa in $(cpu_isas); do
      for threads in 1 2; do
        out="$in-$isa-t$threads"
        # shellcheck disable=SC2086
        ATTNGEN_ISA=$isa "$bin" $io -o "$out.npy" --lse "$out-lse.npy" --threads "$threads" \
          >>"$log" 2>&1 || { cat "$log"; die "$name: run failed (ATTNGEN_ISA=$isa, threads $threads, B=$b Lq=$lq Lk=$lk)"; }
        "$npy" compare "$out.npy" "$in-ref.npy" >>"$log" 2>&1 &&
          "$npy" compare "$out-lse.npy" "$in-ref-lse.npy" >>"$log" 2>&1 ||
          { cat "$log"; die "$name: run output differs from the reference (ATTNGEN_ISA=$isa, threads $threads)"; }
        cases=$((cases + 1))
      done
    done
  done
  # bad input (a truncated file, a batch mismatch): one line, exit code 2,
  # no sanitizer report, nothing written
  head -c 70 "$dir/b2-q.npy" >"$dir/short.npy"
  for bad in "--q $dir/short.npy --k $dir/b2-k.npy" "--q $dir/b2-q.npy --k $dir/b1-k.npy"; do
    # shellcheck disable=SC2086
    "$bin" $bad --v "$dir/b2-v.npy" $extra2 -o "$dir/bad.npy" >"$dir/bad.log" 2>&1
    rc=$?
    if [ "$rc" -ne 2 ] || [ "$(wc -l <"$dir/bad.log")" -ne 1 ] || [ -e "$dir/bad.npy" ]; then
      cat "$dir/bad.log"; die "$name: bad input ($bad) did not give one line and exit code 2 (got $rc)"
    fi
    cases=$((cases + 1))
  done
  echo "$cases" >"$results/run-$name.check"
  echo "sanitize: $name: run tool passed $cases cases (every ISA, 1 and 2 threads, bad input) in $(since "$t0") s"
  ;;

summary)
  results=$1; shift
  checks=0; kernels=0; runs=0
  for name in "$@"; do
    [ -f "$results/$name.check" ] || die "$name: no result (did it run?)"
    n=$(cat "$results/$name.check")
    case "$name" in
      run-*) runs=$((runs + n)) ;;
      *) checks=$((checks + n)); kernels=$((kernels + 1)) ;;
    esac
  done
  echo "sanitize: $checks kernel x ISA checks ($kernels kernels) and $runs run-tool cases passed under ASan+UBSan"
  ;;

valgrind)
  dir=$1; shift
  command -v valgrind >/dev/null 2>&1 || die "valgrind is not installed (scripts/bootstrap.sh)"
  vg="valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible --suppressions=tests/valgrind.supp"
  total=0
  for name in "$@"; do
    t0=$(date +%s)
    bin=$dir/${name}_run; npy=$dir/npy_tool
    hq=$(spec_value "$name" heads_q); hkv=$(spec_value "$name" heads_kv)
    d=$(spec_value "$name" head_dim); dv=$(spec_value "$name" head_dim_v)
    padding=$(spec_value "$name" padding); mask=$(spec_value "$name" mask)
    sinks=$(spec_value "$name" sinks)
    rel=$(rel_rows "$name")
    [ -n "$hq" ] && [ -n "$hkv" ] && [ -n "$d" ] && [ -n "$dv" ] && [ -n "$padding" ] \
      && [ -n "$mask" ] || die "$name: cannot read the config from its generated header"
    work=$dir/$name
    rm -rf "$work"; mkdir -p "$work"
    log=$work/log
    : >"$log"
    n=0
    # a prefill (Lq 21) and a decode step (Lq 2: the decode path), batch 2
    for lq in 21 2; do
      b=2; lk=23; in=$work/lq$lq
      "$npy" random "$in-q.npy" f32 1 $b $lq "$hq" "$d" >>"$log" 2>&1 &&
        "$npy" random "$in-k.npy" f32 2 $b $lk "$hkv" "$d" >>"$log" 2>&1 &&
        "$npy" random "$in-v.npy" f32 3 $b $lk "$hkv" "$dv" >>"$log" 2>&1 ||
        { cat "$log"; die "$name: npy_tool failed"; }
      extra=""
      if [ "$padding" = true ]; then
        "$npy" ints "$in-s.npy" $lk 11 >>"$log" 2>&1 || die "$name: npy_tool failed"
        extra="--seqlens-k $in-s.npy"
      fi
      case "$mask" in
        bool) "$npy" random "$in-m.npy" b1 4 $lq $lk >>"$log" 2>&1; extra="$extra --mask $in-m.npy" ;;
        bias) "$npy" random "$in-m.npy" f32 4 1 "$hq" $lq $lk >>"$log" 2>&1; extra="$extra --mask $in-m.npy" ;;
      esac
      if [ "$sinks" = true ]; then
        "$npy" random "$in-sk.npy" f32 5 "$hq" >>"$log" 2>&1 || die "$name: npy_tool failed"
        extra="$extra --sinks $in-sk.npy"
      fi
      if [ -n "$rel" ]; then
        "$npy" random "$in-rt.npy" f32 6 "$rel" "$hq" >>"$log" 2>&1 || die "$name: npy_tool failed"
        extra="$extra --rel-table $in-rt.npy"
      fi
      io="--q $in-q.npy --k $in-k.npy --v $in-v.npy $extra"
      # the reference, the dispatched kernel (AVX2 under valgrind) with 1
      # and 2 OpenMP threads, and the scalar variant
      for run in "ref:--reference" "auto-t1:--threads 1" "auto-t2:--threads 2" "scalar:--isa scalar --threads 1"; do
        tag=${run%%:*}; opts=${run#*:}
        # shellcheck disable=SC2086
        if ! $vg "$bin" $io -o "$in-$tag.npy" --lse "$in-$tag-lse.npy" $opts >"$in-$tag.log" 2>&1; then
          cat "$in-$tag.log"; die "$name: valgrind reports errors (run $opts, Lq $lq)"
        fi
        if [ "$tag" != ref ]; then
          "$npy" compare "$in-$tag.npy" "$in-ref.npy" >>"$log" 2>&1 &&
            "$npy" compare "$in-$tag-lse.npy" "$in-ref-lse.npy" >>"$log" 2>&1 ||
            { cat "$log"; die "$name: output under valgrind differs from the reference ($opts, Lq $lq)"; }
        fi
        n=$((n + 1))
      done
    done
    # an error path: exit code 2 and nothing lost
    head -c 70 "$in-q.npy" >"$work/short.npy"
    # shellcheck disable=SC2086
    $vg "$bin" --q "$work/short.npy" --k "$in-k.npy" --v "$in-v.npy" $extra -o "$work/bad.npy" \
      >"$work/bad.log" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || { cat "$work/bad.log"; die "$name: bad input under valgrind: exit code $rc, expected 2"; }
    n=$((n + 1))
    total=$((total + n))
    echo "valgrind: $name: $n runs of the run tool clean (memcheck, leak check) in $(since "$t0") s"
  done
  echo "valgrind: $total runs clean"
  ;;

*)
  echo "usage: tests/sanitize.sh check|run|summary|valgrind ..." >&2
  exit 2
  ;;
esac
