#!/bin/sh
# bench/decode_step.sh [BUILD] - builds and runs bench/decode_step.c (part of
# `make bench`): the llama3_8b preset and its shape changed to 16 query heads,
# 4 kv heads, D 64, generated into BUILD/step (tiles from the heuristic), the
# runtime and the bench, -O2 -fopenmp.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}/step
mkdir -p "$B"
ATTNGEN_TUNE_DB=none bin/attngen generate -q llama3_8b --set 'name="step_llama3_8b"' -o "$B"
ATTNGEN_TUNE_DB=none bin/attngen generate -q llama3_8b --set 'name="step_16_4_64"' --set heads_q=16 \
  --set heads_kv=4 --set head_dim=64 -o "$B"
CC=${CC:-cc}
FLAGS="-std=c99 -O2 -fopenmp -Wall -Wextra -Werror -Iruntime -I$B"
$CC $FLAGS -c "$B/step_llama3_8b.c" -o "$B/step_llama3_8b.o" &
p1=$!
$CC $FLAGS -c "$B/step_16_4_64.c" -o "$B/step_16_4_64.o"
wait $p1
$CC $FLAGS bench/decode_step.c runtime/attn_runtime.c "$B/step_llama3_8b.o" "$B/step_16_4_64.o" -o "$B/decode_step" -lm
"$B/decode_step"
