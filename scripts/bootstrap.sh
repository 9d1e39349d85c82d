#!/bin/sh
# Installs the Debian packages attngen needs when they are missing (the list
# and what each is for: docs/testing.md).  As root it runs apt-get; otherwise it prints the one command to
# run and fails.  Usage: scripts/bootstrap.sh [--optional]
set -eu

# package : a file that proves it is installed
REQUIRED="
luajit:/usr/bin/luajit
lua5.4:/usr/bin/lua5.4
lua5.1:/usr/bin/lua5.1
lua-penlight:/usr/share/lua/5.1/pl/template.lua
lua-argparse:/usr/share/lua/5.1/argparse.lua
lua-dkjson:/usr/share/lua/5.1/dkjson.lua
lua-busted:/usr/bin/busted
lua-check:/usr/bin/luacheck
libcriterion-dev:/usr/include/criterion/criterion.h
gcc:/usr/bin/gcc
g++:/usr/bin/g++
clang:/usr/bin/clang
cmake:/usr/bin/cmake
libomp-dev:/usr/include/omp.h
make:/usr/bin/make
gcc-aarch64-linux-gnu:/usr/bin/aarch64-linux-gnu-gcc
libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/include/stdio.h
qemu-user:/usr/bin/qemu-aarch64
valgrind:/usr/bin/valgrind
libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
gnuplot-nox:/usr/bin/gnuplot
"
OPTIONAL="
libopenblas-dev:/usr/lib/x86_64-linux-gnu/libopenblas.so
"

want="$REQUIRED"
[ "${1:-}" = "--optional" ] && want="$REQUIRED $OPTIONAL"

missing=""
for entry in $want; do
  pkg=${entry%%:*}
  file=${entry#*:}
  # libomp-dev ships omp.h under the clang tree; accept any clang's copy
  if [ "$pkg" = libomp-dev ]; then
    ls /usr/lib/llvm-*/lib/clang/*/include/omp.h >/dev/null 2>&1 && continue
  fi
  # libclang-rt-14-dev (libFuzzer, the sanitizer runtimes): any 14.x point release
  if [ "$pkg" = libclang-rt-14-dev ]; then
    ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 && continue
  fi
  [ -e "$file" ] || missing="$missing $pkg"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "attngen: missing packages; run: sudo apt-get install -y$missing" >&2
  exit 2
fi
echo "bootstrap: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends $missing >/tmp/attngen-bootstrap.log 2>&1; then
  apt-get update >>/tmp/attngen-bootstrap.log 2>&1 || true
  apt-get install -y --no-install-recommends $missing >>/tmp/attngen-bootstrap.log 2>&1 || {
    echo "attngen: apt-get install failed (log: /tmp/attngen-bootstrap.log)" >&2
    exit 2
  }
fi
