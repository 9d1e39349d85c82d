#!/bin/sh
# scripts/build_parts.sh FILE.c - the build parts of a generated kernel file,
# one number a line (0 the dispatch, then the variants' parts, each once):
# compile FILE.c once per number with -DATTN_BUILD_PART=K.  Prints nothing
# for a file without build parts (the runtime, an example).
[ $# -eq 1 ] || { echo "usage: scripts/build_parts.sh FILE.c" >&2; exit 2; }
sed -n 's/.*ATTN_BUILD_PART == \([0-9]*\).*/\1/p' "$1" | sort -un
