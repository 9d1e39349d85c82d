#!/bin/sh
# generated/ must be byte-identical to a fresh generation of configs/*.lua,
# and hold nothing else; runtime/attn_cpu_profiles.h to a fresh rendering of
# generator/cpu/.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ATTNGEN_TUNE_DB=none bin/attngen generate -q configs/*.lua -o "$tmp/generated" >/dev/null
if ! diff -r -q generated "$tmp/generated" >/dev/null; then
  echo "generated/ differs from a fresh 'make generate':"
  diff -r generated "$tmp/generated" | head -n 40
  exit 1
fi
lua=$(command -v luajit || command -v lua5.4 || command -v lua5.1)
# a micro-kernel's name (named by its math) is the same text in every preset
ATTNGEN_ROOT=. "$lua" tests/check_micro_kernels.lua generated/*.c >/dev/null
# runtime/attn_cpu_profiles.h must be a fresh rendering of generator/cpu/
ATTNGEN_ROOT=. "$lua" scripts/gen_cpu_profiles.lua "$tmp/attn_cpu_profiles.h"
if ! cmp -s runtime/attn_cpu_profiles.h "$tmp/attn_cpu_profiles.h"; then
  echo "runtime/attn_cpu_profiles.h differs from a fresh 'make cpu-profiles':"
  diff runtime/attn_cpu_profiles.h "$tmp/attn_cpu_profiles.h" | head -n 40
  exit 1
fi
