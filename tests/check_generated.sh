#!/bin/sh
# generated/ must be byte-identical to a fresh generation of configs/*.lua,
# and hold nothing else.
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
