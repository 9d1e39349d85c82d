#!/bin/sh
# Many attngen processes at once on one cache and one output folder.
#
#   1. N `attngen run` of one config on a fresh $ATTNGEN_CACHE, started
#      together (they race to build the kernel), each with its own inputs
#      and outputs: all succeed; each output is bit for bit the output of a
#      later serial run on the same inputs and agrees with the float64
#      reference; the cache then holds exactly the config's entry and the
#      shared runtime's, complete, and no temporary folder.
#   2. N `attngen generate` of several configs into one folder, started
#      together: all succeed, and the folder holds exactly the files of a
#      serial generation, byte for byte, and no temporary file.
#   3. A run killed (SIGKILL) while it holds a build lock: the next run
#      finds the lock's process gone, builds and gives the serial output,
#      and removes the killed build's private folder.
#
# Usage: tests/concurrency.sh [N]   (N defaults to 16; CC as for attngen)
# Exit code 0 when every check passes.  Takes ~30-60 s on 2 cores.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
N=${1:-16}
ATTNGEN="$ROOT/bin/attngen"
work=$(mktemp -d "${TMPDIR:-/tmp}/attngen-concurrency.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# expect GOT WANT OK-MESSAGE FAIL-MESSAGE: counts equal or not
expect() { if [ "$1" -eq "$2" ]; then ok "$3"; else bad "$4"; fi; }

# starts "$@" in the background, held until $work/go exists
held() {
  ( while [ ! -e "$work/go" ]; do sleep 0.01; done; exec "$@" ) &
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

"${CC:-cc}" -std=c99 -O2 -Iruntime tests/npy_tool.c runtime/attn_npy.c -o "$work/npy_tool" -lm || exit 1
NPY="$work/npy_tool"

# --- 1. run: N processes race to build one config into a fresh cache -------
CFG="$ROOT/configs/test/t_d1.lua" # heads_q 2, head_dim 1: the quickest kernel to compile
export ATTNGEN_CACHE="$work/cache"
i=1
while [ "$i" -le "$N" ]; do
  d="$work/run$i"
  mkdir -p "$d"
  # each process its own shapes and values: batch 2, seq_q 1..8, seq_k 3..13
  lq=$((1 + i % 8)); lk=$((3 + (i * 7) % 11))
  "$NPY" random "$d/q.npy" f32 "$i" 2 "$lq" 2 1 &&
    "$NPY" random "$d/k.npy" f32 "$((i + 100))" 2 "$lk" 2 1 &&
    "$NPY" random "$d/v.npy" f32 "$((i + 200))" 2 "$lk" 2 1 || exit 1
  i=$((i + 1))
done

t0=$(now)
i=1
while [ "$i" -le "$N" ]; do
  d="$work/run$i"
  # shellcheck disable=SC2016
  held sh -c '"$1" run "$2" --q "$3/q.npy" --k "$3/k.npy" --v "$3/v.npy" \
    -o "$3/o.npy" --lse "$3/l.npy" >"$3/log" 2>&1; echo $? >"$3/rc"' sh "$ATTNGEN" "$CFG" "$d"
  i=$((i + 1))
done
touch "$work/go"
wait
echo "  $N parallel runs on a cold cache: $(elapsed "$t0") s"

n_ok=0
i=1
while [ "$i" -le "$N" ]; do
  d="$work/run$i"
  if [ "$(cat "$d/rc" 2>/dev/null)" = 0 ] && [ -s "$d/o.npy" ] && [ -s "$d/l.npy" ]; then
    n_ok=$((n_ok + 1))
  else
    echo "  run $i: exit $(cat "$d/rc" 2>/dev/null): $(cat "$d/log")"
  fi
  i=$((i + 1))
done
expect "$n_ok" "$N" "$N parallel runs all succeeded" "$n_ok of $N parallel runs succeeded"

entries=$(ls -A "$ATTNGEN_CACHE")
kentry=$(echo "$entries" | grep '^t_d1-[0-9a-f]*$')
rentry=$(echo "$entries" | grep '^runtime-[0-9a-f]*$')
if [ "$(echo "$entries" | wc -l)" -eq 2 ] && [ -n "$kentry" ] && [ -n "$rentry" ]; then
  e="$ATTNGEN_CACHE/$kentry"
  if [ -x "$e/attn_run" ] && [ -x "$e/attn_check" ] && [ -x "$e/attn_bench" ] && [ -f "$ATTNGEN_CACHE/$rentry/complete" ]
  then
    ok "the cache holds the config's entry and the shared runtime's, complete ($kentry, $rentry)"
  else
    bad "an entry is incomplete: $(find "$e" "$ATTNGEN_CACHE/$rentry" | tr '\n' ' ')"
  fi
else
  bad "the cache holds, instead of the config's entry and the runtime's: $(echo "$entries" | tr '\n' ' ')"
fi

# every output equals a serial run on the same inputs and the reference
t0=$(now)
same=0
close=0
i=1
while [ "$i" -le "$N" ]; do
  d="$work/run$i"
  in="--q $d/q.npy --k $d/k.npy --v $d/v.npy"
  # shellcheck disable=SC2086
  "$ATTNGEN" run "$CFG" $in -o "$d/o_serial.npy" --lse "$d/l_serial.npy" &&
    "$ATTNGEN" run "$CFG" $in --reference -o "$d/o_ref.npy" --lse "$d/l_ref.npy" || echo "  run $i: serial run failed"
  if cmp -s "$d/o.npy" "$d/o_serial.npy" && cmp -s "$d/l.npy" "$d/l_serial.npy"; then
    same=$((same + 1))
  else
    echo "  run $i: differs from the serial run"
  fi
  if "$NPY" compare "$d/o.npy" "$d/o_ref.npy" >"$d/cmp" 2>&1 && "$NPY" compare "$d/l.npy" "$d/l_ref.npy" >>"$d/cmp" 2>&1
  then
    close=$((close + 1))
  else
    echo "  run $i: against the reference: $(cat "$d/cmp")"
  fi
  i=$((i + 1))
done
echo "  $N serial runs and $N reference runs: $(elapsed "$t0") s"
expect "$same" "$N" "every parallel output equals the serial one bit for bit" \
  "$same of $N parallel outputs equal the serial ones"
expect "$close" "$N" "every parallel output agrees with the reference" \
  "$close of $N parallel outputs agree with the reference"
now_entries=$(ls -A "$ATTNGEN_CACHE")
if [ "$now_entries" = "$entries" ]; then ok "the serial runs reused the entry"
else bad "the serial runs changed the cache: $(echo "$now_entries" | tr '\n' ' ')"; fi

# --- 2. generate: N processes write several configs into one folder --------
CONFIGS="gpt2 vit_b16 bert_base configs/test/t_d1.lua configs/test/t_everything.lua configs/test/t_bool_mask.lua"
# shellcheck disable=SC2086
"$ATTNGEN" generate -q $CONFIGS -o "$work/gen_serial" || bad "the serial generation failed"
t0=$(now)
i=1
while [ "$i" -le "$N" ]; do
  # each process all the configs, starting at a different one
  first=$((i % 6))
  list=""
  j=0
  for c in $CONFIGS; do [ "$j" -ge "$first" ] && list="$list $c"; j=$((j + 1)); done
  j=0
  for c in $CONFIGS; do [ "$j" -lt "$first" ] && list="$list $c"; j=$((j + 1)); done
  # shellcheck disable=SC2016
  held sh -c '"$1" generate -q $2 -o "$3/gen" >"$3/gen_log$4" 2>&1; echo $? >"$3/gen_rc$4"' \
    sh "$ATTNGEN" "$list" "$work" "$i"
  i=$((i + 1))
done
rm -f "$work/go"
touch "$work/go"
wait
echo "  $N parallel generations: $(elapsed "$t0") s"

n_ok=0
i=1
while [ "$i" -le "$N" ]; do
  if [ "$(cat "$work/gen_rc$i" 2>/dev/null)" = 0 ]; then n_ok=$((n_ok + 1))
  else echo "  generate $i: exit $(cat "$work/gen_rc$i" 2>/dev/null): $(cat "$work/gen_log$i")"; fi
  i=$((i + 1))
done
expect "$n_ok" "$N" "$N parallel generations all succeeded" "$n_ok of $N parallel generations succeeded"
if diff -r "$work/gen_serial" "$work/gen" >"$work/gen_diff" 2>&1; then
  ok "the folder holds exactly the serial generation's $(find "$work/gen" -type f | wc -l) files"
else
  bad "the folder differs from a serial generation: $(head -c 400 "$work/gen_diff")"
fi

# --- 3. a build killed while it holds its lock does not stall the next -----
# (the next run finds the lock's process gone and builds)
export ATTNGEN_CACHE="$work/cache3"
d="$work/run1"
"$ATTNGEN" run "$CFG" --q "$d/q.npy" --k "$d/k.npy" --v "$d/v.npy" -o "$d/o_killed.npy" >/dev/null 2>&1 &
victim=$!
k=0
# (killed once its private build folder exists)
while [ "$k" -lt 100 ] && [ -z "$(find "$ATTNGEN_CACHE" -maxdepth 1 -name '.build-*' 2>/dev/null)" ]; do
  sleep 0.1
  k=$((k + 1))
done
locked=$(find "$ATTNGEN_CACHE" -maxdepth 1 -name '*.lock' 2>/dev/null | head -n 1)
kill -9 "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
victim_dirs=$(find "$ATTNGEN_CACHE" -maxdepth 1 -name ".build-*-p$victim-*" 2>/dev/null)
t0=$(now)
if [ -n "$locked" ] && "$ATTNGEN" run "$CFG" --q "$d/q.npy" --k "$d/k.npy" --v "$d/v.npy" -o "$d/o_after.npy" \
    >"$d/log_after" 2>&1 && cmp -s "$d/o_after.npy" "$d/o_serial.npy"; then
  ok "a run after a build killed with its lock held ($(basename "$locked")) builds and matches ($(elapsed "$t0") s)"
else
  bad "after a killed build (lock: ${locked:-none seen}): $(cat "$d/log_after" 2>/dev/null)"
fi
# the next build removes what the killed one left: its private folder and its lock
left=$(find "$ATTNGEN_CACHE" -maxdepth 1 \( -name ".build-*" -o -name '*.lock' \) 2>/dev/null)
if [ -n "$victim_dirs" ] && [ -z "$left" ]; then
  ok "the killed build's folder ($(basename "$victim_dirs")) was removed by the next build"
else
  bad "after a killed build: its folder ${victim_dirs:-was not seen}; left in the cache: ${left:-nothing}"
fi
rm -rf "$ATTNGEN_CACHE"

leftovers=$(find "$work" -name '*.tmp.*' -o -name '.build-*')
if [ -z "$leftovers" ]; then ok "no temporary file or folder left"; else bad "left behind: $leftovers"; fi

echo "concurrency: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
