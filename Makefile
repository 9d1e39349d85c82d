# attngen: generate, verify and benchmark CPU attention kernels.
#   make demo       generate the default preset, verify it, time it against the reference
#   make test       every check (lint, Lua specs, generated/ freshness, strict compiles, vendoring,
#                   kernels, AArch64 under qemu, concurrency, sanitizers, valgrind, a short fuzz run)
#   make test-full  the same with the sweeps make test trims (docs/testing.md)
#   make generate   regenerate generated/ from configs/ (never reads a tuning file)
#   make cpu-profiles  regenerate runtime/attn_cpu_profiles.h from generator/cpu/
#   make bench      the benchmark suite (prefill and decode targets, bench/results.json, bench/prefill.svg)
#   make sanitize / valgrind-run / fuzz / fuzz-long / vendor-test   parts of make test, or longer runs
# Both demo and test install missing Debian packages first (scripts/bootstrap.sh).

ATTNGEN  := bin/attngen
PRESET   ?= llama3_8b
BUILD    := build
CC       ?= cc
JOBS     ?= 2

PRESETS      := $(sort $(basename $(notdir $(wildcard configs/*.lua))))
TEST_CONFIGS := $(sort $(basename $(notdir $(wildcard configs/test/*.lua))))
CONFIG_FILES := $(wildcard configs/*.lua configs/test/*.lua)

# The Lua interpreter, and the configs tests/kernel_sets.lua picks from
# configs/ for a purpose (sanitize, sanitize-presets, run, fuzz, neon).
# Recursive (=), and never in a rule's prerequisites as read: a target that
# needs a set expands it in its recipe (and builds the set's parts with a
# sub-make), so neither runs unless that target does, and the sets exist
# once bootstrap has installed Lua.
LUA        = $(firstword $(shell command -v luajit lua5.4 lua5.1))
kernel_set = $(or $(shell $(or $(LUA),$(error no Lua interpreter (luajit, lua5.4, lua5.1): run 'make bootstrap')) \
               tests/kernel_sets.lua $(1) $(CONFIG_FILES)),$(error tests/kernel_sets.lua $(1) picked no configs))

# The tools reach their kernel through attn_entry_kernel, which
# runtime/tools/attn_entry.c defines from -DATTN_ENTRY_KERNEL (in a rule
# whose stem $* is the config's name).
ENTRY_SRC    := runtime/tools/attn_entry.c
# (and, for a config with backward = true, its backward pass's descriptor)
BWD_CONFIGS  ?= $(call kernel_set,backward)
ENTRY_DEFINE  = -DATTN_ENTRY_KERNEL=attn_$*_kernel \
  $(if $(filter $*,$(BWD_CONFIGS)),-DATTN_ENTRY_BWD_KERNEL=attn_$*_bwd_kernel)

.PHONY: all bootstrap generate cpu-profiles demo test test-full lint check-generated clean neon-check bench bench-quick vendor-test \
  decode-loop
.SECONDARY:

all: demo

bootstrap:
	@scripts/bootstrap.sh

generate: bootstrap
	ATTNGEN_TUNE_DB=none $(ATTNGEN) generate -q configs/*.lua -o generated

# the runtime's table of CPU profiles, rendered from generator/cpu/*.lua
cpu-profiles: bootstrap
	ATTNGEN_ROOT=$(CURDIR) $(LUA) scripts/gen_cpu_profiles.lua

demo: bootstrap
	$(ATTNGEN) generate $(PRESET) -o $(BUILD)/demo
	$(ATTNGEN) check $(PRESET) --quick
	$(ATTNGEN) bench $(PRESET) --seq-q 256 --threads 1

test: bootstrap
	@JOBS=$(JOBS) tests/run.sh

# make test with the sweeps it trims (docs/testing.md, "What make test
# leaves to make test-full"): the same suites and summary line
test-full: bootstrap
	@JOBS=$(JOBS) TEST_FULL=1 tests/run.sh

lint: bootstrap
	luacheck -q generator tests bench scripts

# --- the kernel test binary: every preset (from generated/) and test config ---

TEST_GEN    := $(BUILD)/gen-test
KOBJ        := $(BUILD)/obj
UK_DIR      := $(BUILD)/ukernel
TEST_CFLAGS := -std=c99 -O2 -g -fopenmp -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Iruntime
# the kernels' objects carry line tables only (-g1): full debug information
# makes gcc take 1.7 times as long on a generated file (7.3 s against 4.4 s for
# llama3_8b), while a backtrace needs only functions and lines
KERNEL_CFLAGS := $(TEST_CFLAGS:-g=-g1)
# the runtime the tools and tests link: the verification harness
# (attn_verify.c) and each family's cases (attn_cases_*.c, docs/architecture.md)
CASES_SRC   := runtime/attn_cases_sdpa.c runtime/attn_cases_linear.c runtime/attn_cases_classic.c \
               runtime/attn_cases_paged.c runtime/attn_cases_sdpa_bwd.c
RUNTIME_SRC := runtime/attn_runtime.c runtime/attn_reference.c runtime/attn_npy.c runtime/attn_verify.c $(CASES_SRC)

# gcc's precompiled headers for the x86-64 kernel compiles: the headers a
# kernel's file includes (templates/lib/includes) with the intrinsics, in
# KERNEL_CFLAGS, forced in first (-include) where a compile reads
# immintrin.h (alone about half a second of gcc's time; the file's own
# #includes then find them read).  Where gcc refuses the .gch it reads the
# header itself, so the objects are the same either way; another compiler
# (clang: CC=clang) compiles without.
KERNEL_PCH := $(BUILD)/pch/attn_kernel_headers.h
PCH_OK     := $(filter-out 0,$(shell $(CC) --version 2>/dev/null | grep -c 'Free Software Foundation'))
PCH_FLAG   := $(if $(PCH_OK),-include $(KERNEL_PCH),)
PCH_DEP    := $(if $(PCH_OK),$(KERNEL_PCH).gch,)
$(KERNEL_PCH): Makefile
	@mkdir -p $(@D)
	@printf '%s\n' '#include <math.h>' '#include <stdint.h>' '#include <string.h>' '#ifdef _OPENMP' \
	  '#include <omp.h>' '#endif' '#if defined(__x86_64__) || defined(_M_X64)' '#include <immintrin.h>' '#endif' >$@
$(KERNEL_PCH).gch: $(KERNEL_PCH) Makefile
	$(CC) $(KERNEL_CFLAGS) -x c-header $< -o $@

# (generate leaves a file it would write unchanged alone; the touch tells
# make that the target is new, else it goes on finding it out of date and,
# having run its recipe, skips the rest of the targets that need it)
$(TEST_GEN)/%.c $(TEST_GEN)/%.h: configs/test/%.lua $(wildcard generator/*.lua generator/*/*.lua templates/*.tmpl templates/*/*.tmpl)
	@mkdir -p $(TEST_GEN)
	ATTNGEN_TUNE_DB=none $(ATTNGEN) generate -q $< -o $(TEST_GEN) && touch $(TEST_GEN)/$*.c $(TEST_GEN)/$*.h

# the presets' kernels in their build parts (scripts/build_parts.sh: K = 0
# the dispatch, then the variants), each compiled alone as the build cache
# does, and strict (-Wpedantic): gcc's share of make test's check that every
# preset compiles warning-free (clang and the AArch64 gcc compile each file
# whole there): $(KOBJ)/preset/NAME/K.o, a pattern rule per preset.
# (intrinsics_part FILE,K: whether build part K of FILE includes an x86
# intrinsics header: its #include's guard names the part)
intrinsics_part = $(shell grep -q -e '__x86_64__.*ATTN_BUILD_PART == $(2)\b' $(1) && echo yes)
PRESET_PARTS := $(foreach n,$(PRESETS),$(foreach k,$(shell scripts/build_parts.sh generated/$(n).c),\
  $(KOBJ)/preset/$(n)/$(k).o))
define preset_parts_rule
$(KOBJ)/preset/$(1)/%.o: generated/$(1).c generated/$(1).h runtime/attn_runtime.h | $(PCH_DEP)
	@mkdir -p $$(@D)
	$$(CC) $$(KERNEL_CFLAGS) -Wpedantic $$(if $$(call intrinsics_part,$$<,$$*),$(PCH_FLAG)) -DATTN_BUILD_PART=$$* \
	  -Igenerated -c $$< -o $$@
endef
$(foreach n,$(PRESETS),$(eval $(call preset_parts_rule,$(n))))

$(KOBJ)/rt_%.o: runtime/%.c runtime/*.h
	@mkdir -p $(KOBJ)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

# the kernels the test binary runs: derived from configs/, never kept by hand
$(BUILD)/kernel_list.h: $(wildcard configs/*.lua configs/test/*.lua)
	@mkdir -p $(BUILD)
	@{ echo '/* generated by the Makefile from configs/: KERNEL(name) per config, and'; \
	   echo '   KERNEL_MATMUL_BF16(name) per config with bf16 products, KERNEL_BWD(name) per config'; \
	   echo '   with a backward pass, KERNEL_TEST_CONFIG(name) per test config (nothing unless defined) */'; \
	   echo '#ifndef KERNEL_MATMUL_BF16'; echo '#define KERNEL_MATMUL_BF16(name)'; echo '#endif'; \
	   for n in $(PRESETS) $(TEST_CONFIGS); do echo "KERNEL($$n)"; done; \
	   for n in $(call kernel_set,matmul_bf16); do echo "KERNEL_MATMUL_BF16($$n)"; done; \
	   echo '#undef KERNEL_MATMUL_BF16'; \
	   echo '#ifndef KERNEL_BWD'; echo '#define KERNEL_BWD(name)'; echo '#endif'; \
	   for n in $(call kernel_set,backward); do echo "KERNEL_BWD($$n)"; done; \
	   echo '#undef KERNEL_BWD'; \
	   echo '#ifndef KERNEL_TEST_CONFIG'; echo '#define KERNEL_TEST_CONFIG(name)'; echo '#endif'; \
	   for n in $(TEST_CONFIGS); do echo "KERNEL_TEST_CONFIG($$n)"; done; \
	   echo '#undef KERNEL_TEST_CONFIG'; } > $@

# a test config's kernel is compiled once, inside the file of its
# micro-kernel tests (which #includes it, see below): the kernel tests link
# that object, and the testers it calls
KERNEL_OBJS  := $(PRESET_PARTS) $(TEST_CONFIGS:%=$(UK_DIR)/x86-64/%_tests.o) \
  $(UK_DIR)/x86-64/ukernel.o
RUNTIME_OBJS := $(RUNTIME_SRC:runtime/%.c=$(KOBJ)/rt_%.o)

# the kernels' vector math, exported for tests/test_vmath.c
$(BUILD)/vmath.c: tests/gen_vmath.lua templates/lib/vmath.c.tmpl templates/vmath_test.c.tmpl $(wildcard generator/*.lua generator/*/*.lua)
	@mkdir -p $(BUILD)
	ATTNGEN_ROOT=$(CURDIR) $(LUA) tests/gen_vmath.lua $@ && touch $@

$(BUILD)/test_kernels: tests/test_kernels.c tests/test_vmath.c tests/test_extremes.c tests/test_threads.c \
  tests/test_convert.c tests/test_quant.c tests/test_linear.c tests/test_classic.c tests/test_cpu.c tests/verify_variants.h $(BUILD)/vmath.c \
  tests/test_backward.c $(BUILD)/kernel_list.h $(KERNEL_OBJS) $(RUNTIME_OBJS)
	$(CC) $(TEST_CFLAGS) -pthread -I$(BUILD) tests/test_kernels.c tests/test_vmath.c tests/test_extremes.c \
	  tests/test_threads.c tests/test_convert.c tests/test_quant.c tests/test_linear.c tests/test_classic.c tests/test_cpu.c $(BUILD)/vmath.c \
	  tests/test_backward.c \
	  $(KERNEL_OBJS) $(RUNTIME_OBJS) -o $@ -lcriterion -lm

check-generated:
	@tests/check_generated.sh

# examples/decode_loop.c: a serving loop over an f16 cache with RoPE, checked step by step
$(BUILD)/examples/decode_loop.c: examples/decode_loop.lua $(wildcard templates/*/*.tmpl generator/*.lua generator/*/*.lua)
	@mkdir -p $(BUILD)/examples
	$(ATTNGEN) generate -q examples/decode_loop.lua -o $(BUILD)/examples

$(BUILD)/examples/decode_loop: examples/decode_loop.c $(BUILD)/examples/decode_loop.c $(RUNTIME_OBJS)
	$(CC) $(KERNEL_CFLAGS) -Wpedantic -I$(BUILD)/examples examples/decode_loop.c $(BUILD)/examples/decode_loop.c \
	  $(RUNTIME_OBJS) -o $@ -lm

decode-loop: $(BUILD)/examples/decode_loop
	$(BUILD)/examples/decode_loop

vendor-test:
	@JOBS=$(JOBS) tests/vendor_test.sh

clean:
	rm -rf $(BUILD)

# --- AArch64: the check tool of each test config with a NEON variant
# (tests/kernel_sets.lua neon), built with the cross compiler and run under
# qemu-user: NEON and scalar variants.  (The presets' AArch64 build is
# checked by the strict compiles; their reference runs are too slow under
# emulation.) ---

NEON_CONFIGS ?= $(call kernel_set,neon)
NEON_SCALAR  ?= $(call kernel_set,neon_scalar)
AARCH64_CC   ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
NEON_CFLAGS  := -std=c99 -O2 -static -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Iruntime

# the runtime and the check tool's main, compiled once; each config's
# kernel and entry compiled with its name and linked to them
NEON_OBJ  := $(BUILD)/neon/obj
NEON_RT   := $(addprefix $(NEON_OBJ)/,attn_runtime.o attn_reference.o attn_verify.o attn_check_main.o) \
  $(CASES_SRC:runtime/%.c=$(NEON_OBJ)/%.o)
NEON_LINK = $(AARCH64_CC) $(NEON_CFLAGS) $(ENTRY_DEFINE) -I$(dir $<) $< $(ENTRY_SRC) $(NEON_RT) -o $@ -lm

$(NEON_OBJ)/%.o: runtime/%.c runtime/*.h
	@mkdir -p $(@D)
	$(AARCH64_CC) $(NEON_CFLAGS) -c $< -o $@

$(NEON_OBJ)/%.o: runtime/tools/%.c runtime/*.h
	@mkdir -p $(@D)
	$(AARCH64_CC) $(NEON_CFLAGS) -c $< -o $@

# presets from generated/, test configs from build/gen-test/
$(BUILD)/neon/%_check: generated/%.c $(ENTRY_SRC) $(NEON_RT)
	@mkdir -p $(@D)
	$(NEON_LINK)

# (a test config's kernel: the object of its micro-kernel tests, which
# #includes it and calls the testers, as on x86-64)
$(BUILD)/neon/%_check: $(UK_DIR)/aarch64/%_tests.o $(UK_DIR)/aarch64/ukernel.o $(ENTRY_SRC) $(NEON_RT)
	@mkdir -p $(@D)
	$(AARCH64_CC) $(NEON_CFLAGS) $(ENTRY_DEFINE) $(ENTRY_SRC) $(filter %.o,$^) -o $@ -lm

# every config's NEON variant; the scalar variant too for NEON_SCALAR, a set
# that covers every feature (the kernel tests run each scalar variant natively)
neon-check:
	@$(MAKE) --no-print-directory NEON_SCALAR="$(NEON_SCALAR)" $(addprefix neon-run-,$(NEON_CONFIGS))

neon-run-%: $(BUILD)/neon/%_check
	@out=$$($(QEMU_AARCH64) $< --quick $(if $(filter $*,$(NEON_SCALAR)),,--isa neon) 2>&1); rc=$$?; \
	  printf '%s\n' "$$out" | sed 's/^/$*: /'; exit $$rc

# --- micro-kernel tests (XNNPACK style): each micro-kernel (naming.lua's
# micro ops) of the test configs checked alone against plain loops, once
# for each name (named by its math, a kernel is the same text in every
# config that needs it: tests/check_micro_kernels.lua), on
# x86-64 (AVX-512 with BF16, AVX-512, AVX2, scalar) and AArch64 under
# qemu-user (NEON, scalar).
# tests/gen_ukernel_tests.lua finds the micro-kernels by parsing the symbol
# names of a generated .c (build/gen-test/) and writes tests that #include it;
# tests/ukernel.c holds the testers, tests/ukernel_main.c the runner.  Every
# test config (a classic kind's file has no micro-kernel and tests nothing):
# each tests' object is that config's compiled kernel for the kernel tests
# (x86-64) and the AArch64 check tool too, so each kernel compiles once per
# architecture.  make test-full also tests the micro-kernels only presets
# define (the presets listed after the test configs, so that a kernel a test
# config defines is tested there; each preset's tests' file #includes
# generated/NAME.c, and one that tests nothing includes nothing); make test
# keeps to the test configs (the presets' add minutes of compiling).
#   make ukernel-test   build/ukernel/x86-64/test_ukernels
#   make ukernel-neon   build/ukernel/aarch64/test_ukernels (under qemu-aarch64) ---

.PHONY: ukernel-test ukernel-neon

UK_CONFIGS := $(TEST_CONFIGS)
UK_PRESETS := $(if $(TEST_FULL),$(PRESETS))
# which of the two lists the list and the runner were written for: a file
# rewritten (when make reads this) only where the scope changed (a stamp
# rule would not do: under .SECONDARY a missing stamp remakes nothing)
UK_SCOPE   := $(UK_DIR)/scope
UK_SCOPE_IS := $(if $(TEST_FULL),test configs and presets,test configs)
$(shell mkdir -p $(UK_DIR) && { [ "$$(cat $(UK_SCOPE) 2>/dev/null)" = "$(UK_SCOPE_IS)" ] || \
  echo "$(UK_SCOPE_IS)" > $(UK_SCOPE); })
UK_CFLAGS  := -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Iruntime -Itests
UK_DEPS    := tests/ukernel.h runtime/attn_runtime.h
# the compiler of each architecture's folder (the AArch64 binary runs under
# qemu-user); on x86-64 the tests' files are built as the kernel tests build
# a kernel (OpenMP, line tables), as they serve both
UK_CC_x86-64  = $(CC)
UK_CC_aarch64 = $(AARCH64_CC)
UK_CFLAGS_x86-64  = $(KERNEL_CFLAGS) -Itests
# make test compiles the AArch64 kernels that run under qemu at -O1: 40%
# less of the cross compiler's time than -O2 (5.4 -> 3.2 s for a test
# config), while what they check is the NEON and scalar variants'
# arithmetic; make test-full compiles them at -O2, as the strict compiles
# and the x86-64 kernel tests always do.  The level is written to a file the
# objects depend on, rewritten when make reads this Makefile and the level
# changed (as UK_SCOPE), so switching between the two rebuilds them.
AARCH64_OPT := $(if $(TEST_FULL),-O2,-O1)
UK_AARCH64_OPT := $(UK_DIR)/aarch64/opt
$(shell mkdir -p $(UK_DIR)/aarch64 && { [ "$$(cat $(UK_AARCH64_OPT) 2>/dev/null)" = "$(AARCH64_OPT)" ] || \
  echo "$(AARCH64_OPT)" > $(UK_AARCH64_OPT); })
UK_CFLAGS_aarch64 = $(UK_CFLAGS) $(AARCH64_OPT)
UK_LDFLAGS_x86-64  = -fopenmp
UK_LDFLAGS_aarch64 = -static

$(UK_DIR)/ukernel_list.h: $(wildcard configs/test/*.lua configs/*.lua) $(UK_SCOPE)
	@mkdir -p $(@D)
	@{ echo '/* generated by the Makefile from configs/test/ (and configs/ in make test-full): KERNEL(name) per config */'; \
	   for n in $(UK_CONFIGS) $(UK_PRESETS); do echo "KERNEL($$n)"; done; } > $@

# the one list of the micro-kernels to test: each distinct one (named by its
# math, one text wherever it is defined: tests/check_micro_kernels.lua
# checks that first) once, with the first test config that defines it; each tests' file
# tests those the list gives its config.  Both are written only where their
# text changes, so an unchanged test is not compiled again.
UK_LIST := $(UK_DIR)/ukernels.list
$(UK_LIST): $(UK_CONFIGS:%=$(TEST_GEN)/%.c) $(UK_PRESETS:%=generated/%.c) tests/gen_ukernel_tests.lua \
  tests/check_micro_kernels.lua generator/naming.lua $(UK_SCOPE)
	@mkdir -p $(@D)
	@ATTNGEN_ROOT=$(CURDIR) $(LUA) tests/check_micro_kernels.lua $(filter %.c,$^) >/dev/null
	@ATTNGEN_ROOT=$(CURDIR) $(LUA) tests/gen_ukernel_tests.lua --list $@ $(filter %.c,$^)

$(UK_DIR)/%_tests.c: $(TEST_GEN)/%.c $(UK_LIST) tests/gen_ukernel_tests.lua $(wildcard generator/*.lua generator/isa/*.lua)
	@mkdir -p $(@D)
	ATTNGEN_ROOT=$(CURDIR) $(LUA) tests/gen_ukernel_tests.lua $< $@ $(UK_LIST)

# a preset's: from generated/, its own folder (a preset and a test config never share a name,
# but the rules must not match each other's files)
$(UK_DIR)/preset/%_tests.c: generated/%.c $(UK_LIST) tests/gen_ukernel_tests.lua
	@mkdir -p $(@D)
	ATTNGEN_ROOT=$(CURDIR) $(LUA) tests/gen_ukernel_tests.lua $< $@ $(UK_LIST) --lean

$(UK_DIR)/x86-64/preset/%_tests.o: $(UK_DIR)/preset/%_tests.c generated/%.c generated/%.h $(UK_DEPS) | $(PCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(UK_CFLAGS_x86-64) $(if $(shell grep -qs -e '<immintrin.h>' generated/$*.c && echo yes),$(PCH_FLAG)) \
	  -Igenerated -c $< -o $@

$(UK_DIR)/aarch64/preset/%_tests.o: $(UK_DIR)/preset/%_tests.c generated/%.c generated/%.h $(UK_DEPS) \
  $(UK_AARCH64_OPT)
	@mkdir -p $(@D)
	$(AARCH64_CC) $(UK_CFLAGS_aarch64) -Igenerated -c $< -o $@

$(UK_DIR)/x86-64/%_tests.o: $(UK_DIR)/%_tests.c $(TEST_GEN)/%.c $(TEST_GEN)/%.h $(UK_DEPS) | $(PCH_DEP)
	@mkdir -p $(@D)
	$(CC) $(UK_CFLAGS_x86-64) $(if $(shell grep -qs -e '<immintrin.h>' $(TEST_GEN)/$*.c && echo yes),$(PCH_FLAG)) \
	  -I$(TEST_GEN) -c $< -o $@

$(UK_DIR)/aarch64/%_tests.o: $(UK_DIR)/%_tests.c $(TEST_GEN)/%.c $(TEST_GEN)/%.h $(UK_DEPS) \
  $(UK_AARCH64_OPT)
	@mkdir -p $(@D)
	$(AARCH64_CC) $(UK_CFLAGS_aarch64) -I$(TEST_GEN) -c $< -o $@

$(UK_DIR)/%/attn_runtime.o: runtime/attn_runtime.c runtime/*.h
	@mkdir -p $(@D)
	$(UK_CC_$*) $(UK_CFLAGS) -c $< -o $@

$(UK_DIR)/%/ukernel.o: tests/ukernel.c $(UK_DEPS)
	@mkdir -p $(@D)
	$(UK_CC_$*) $(UK_CFLAGS) -c $< -o $@

# $(UK_DIR)/ARCH/test_ukernels, ARCH = x86-64 or aarch64
.SECONDEXPANSION:
$(UK_DIR)/%/test_ukernels: tests/ukernel_main.c $(UK_DEPS) $(UK_DIR)/ukernel_list.h \
  $$(addprefix $(UK_DIR)/$$*/,$$(addsuffix _tests.o,$(UK_CONFIGS))) \
  $$(addprefix $(UK_DIR)/$$*/preset/,$$(addsuffix _tests.o,$(UK_PRESETS))) $(UK_DIR)/%/ukernel.o $(UK_DIR)/%/attn_runtime.o
	$(UK_CC_$*) $(UK_CFLAGS) $(UK_LDFLAGS_$*) -I$(UK_DIR) tests/ukernel_main.c $(filter %.o,$^) -o $@ -lm

ukernel-test: $(UK_DIR)/x86-64/test_ukernels
	$<

ukernel-neon: $(UK_DIR)/aarch64/test_ukernels
	$(QEMU_AARCH64) $<

# --- benchmarks (not part of make test: timings are noisy on shared machines) ---
# Both install the optional packages too: libopenblas-dev, for the unfused
# OpenBLAS baselines the bench times next to the kernels.  (A prerequisite,
# not a recipe line: make expands a recipe, $(LUA) included, before running it.)
.PHONY: bootstrap-optional
bootstrap-optional:
	@scripts/bootstrap.sh --optional

bench: bootstrap-optional
	ATTNGEN_ROOT=$(CURDIR) $(LUA) bench/suite.lua
	bench/decode_step.sh $(BUILD)

bench-quick: bootstrap-optional
	ATTNGEN_ROOT=$(CURDIR) $(LUA) bench/suite.lua --quick --out $(BUILD)/bench

# --- sanitizers, valgrind and libFuzzer ---
#   make sanitize      the runtime, the check and run tools and a sample of kernels
#                      under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind-run  the run tool of small configs under valgrind memcheck
#   make fuzz          each libFuzzer target for FUZZ_SECONDS (default 30)
#   make fuzz-long     each libFuzzer target for FUZZ_LONG_SECONDS (default 600)
# The samples come from tests/kernel_sets.lua: for each purpose, the fewest
# configs that together have every feature (masks, padding, window, global
# tokens, softcap, ALiBi, GQA/MQA, odd head dims, Dv != D, explicit tiles)
# some config has; `luajit tests/kernel_sets.lua --explain PURPOSE configs/*.lua
# configs/test/*.lua` shows them.  Setting a list on the command line (make
# sanitize SAN_TESTS="t_d1 t_odd_dims") overrides it.
# Kernels are compiled at -O0 here: with the sanitizers -O1 costs 5-30 times
# longer to compile a generated file (minutes for the largest presets), while
# -O0 keeps every memory access in place for ASan to see.

.PHONY: sanitize valgrind-run fuzz fuzz-long

SAN_DIR      := $(BUILD)/san
SAN_CC       ?= gcc
# (TEST_FULL=1, make test-full: the presets of every feature, not only of
# every kernel family and storage type)
SAN_PRESETS  ?= $(call kernel_set,sanitize-presets$(if $(TEST_FULL),-full))
SAN_TESTS    ?= $(call kernel_set,sanitize)
SAN_KERNELS   = $(SAN_PRESETS) $(SAN_TESTS)
# the run tool on .npy inputs: padding, a bias mask and a bool mask
SAN_RUN      ?= $(call kernel_set,run)
SAN_FLAGS    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
SAN_CFLAGS   := -std=c99 -fopenmp -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
	$(if $(findstring clang,$(SAN_CC)),,-Wno-format-truncation) -Iruntime $(SAN_FLAGS)
SAN_RT_OBJS  := $(RUNTIME_SRC:runtime/%.c=$(SAN_DIR)/rt_%.o)

$(SAN_DIR)/rt_%.o: runtime/%.c runtime/*.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O1 -c $< -o $@

# the reference and the cases' inputs do most of a check's arithmetic (double
# loops over every score; the classic presets' projections): -O2, still
# under both sanitizers (the classic presets' checks took 1.7 times as long
# at -O1)
$(SAN_DIR)/rt_attn_reference.o $(SAN_DIR)/rt_attn_verify.o $(CASES_SRC:runtime/%.c=$(SAN_DIR)/rt_%.o): \
  $(SAN_DIR)/rt_%.o: runtime/%.c runtime/*.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O2 -c $< -o $@

$(SAN_DIR)/tool_%.o: runtime/tools/attn_%_main.c runtime/*.h runtime/tools/*.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O1 -c $< -o $@

$(SAN_DIR)/k_%.o: generated/%.c generated/%.h runtime/attn_runtime.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O0 -Igenerated -c $< -o $@

$(SAN_DIR)/k_%.o: $(TEST_GEN)/%.c $(TEST_GEN)/%.h runtime/attn_runtime.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O0 -I$(TEST_GEN) -c $< -o $@

$(SAN_DIR)/%_entry.o: $(ENTRY_SRC) runtime/attn_runtime.h
	@mkdir -p $(SAN_DIR)
	$(SAN_CC) $(SAN_CFLAGS) -O1 $(ENTRY_DEFINE) -c $< -o $@

$(SAN_DIR)/%_check: $(SAN_DIR)/k_%.o $(SAN_DIR)/%_entry.o $(SAN_DIR)/tool_check.o $(SAN_RT_OBJS)
	$(SAN_CC) $(SAN_CFLAGS) $^ -o $@ -lm

$(SAN_DIR)/%_run: $(SAN_DIR)/k_%.o $(SAN_DIR)/%_entry.o $(SAN_DIR)/tool_run.o $(SAN_RT_OBJS)
	$(SAN_CC) $(SAN_CFLAGS) $^ -o $@ -lm

$(SAN_DIR)/npy_tool: tests/npy_tool.c $(SAN_DIR)/rt_attn_npy.o
	$(SAN_CC) $(SAN_CFLAGS) -O1 $^ -o $@ -lm

# one check tool per kernel, run for every ISA variant this CPU can run
san-check-%: $(SAN_DIR)/%_check
	@tests/sanitize.sh check $< $* $(SAN_DIR)/results

san-run-%: $(SAN_DIR)/%_run $(SAN_DIR)/npy_tool
	@tests/sanitize.sh run $< $* $(SAN_DIR)/results $(SAN_DIR)/npy_tool

sanitize: bootstrap
	@$(MAKE) --no-print-directory $(addprefix san-check-,$(SAN_KERNELS)) $(addprefix san-run-,$(SAN_RUN))
	@tests/sanitize.sh summary $(SAN_DIR)/results $(SAN_KERNELS) $(addprefix run-,$(SAN_RUN))

# valgrind: plain builds (valgrind knows no AVX-512 and hides it from the
# program, so the kernels dispatch to AVX2 there)
VG_DIR     := $(BUILD)/valgrind
VG_CFLAGS  := -std=c99 -O1 -g -fopenmp -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Iruntime
VG_RUN     ?= $(call kernel_set,run)

$(VG_DIR)/%_run: $(TEST_GEN)/%.c $(TEST_GEN)/%.h $(ENTRY_SRC) $(RUNTIME_SRC) runtime/*.h runtime/tools/attn_run_main.c
	@mkdir -p $(VG_DIR)
	$(CC) $(VG_CFLAGS) $(ENTRY_DEFINE) -I$(TEST_GEN) $< $(ENTRY_SRC) $(RUNTIME_SRC) runtime/tools/attn_run_main.c -o $@ -lm

$(VG_DIR)/npy_tool: tests/npy_tool.c runtime/attn_npy.c runtime/attn_npy.h
	@mkdir -p $(VG_DIR)
	$(CC) $(VG_CFLAGS) tests/npy_tool.c runtime/attn_npy.c -o $@ -lm

valgrind-run: bootstrap $(VG_DIR)/npy_tool
	@$(MAKE) --no-print-directory $(patsubst %,$(VG_DIR)/%_run,$(VG_RUN))
	@tests/sanitize.sh valgrind $(VG_DIR) $(VG_RUN)

# libFuzzer (clang): the .npy reader, and argument validation + kernels
FUZZ_DIR          := $(BUILD)/fuzz
FUZZ_CC           ?= clang
FUZZ_SECONDS      ?= 30
FUZZ_LONG_SECONDS ?= 600
FUZZ_KERNELS      ?= $(call kernel_set,fuzz)
FUZZ_SAN          := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
FUZZ_CFLAGS       := -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wno-unknown-pragmas -Iruntime
FUZZ_RT_OBJS      := $(FUZZ_DIR)/rt_attn_runtime.o $(FUZZ_DIR)/ref_attn_reference.o
# comparison tracing only where inputs are decided (the runtime's checks,
# the .npy parser); elsewhere edge coverage, which costs far less
FUZZ_EDGES        := -fsanitize=fuzzer-no-link -fno-sanitize-coverage=trace-cmp

$(FUZZ_DIR)/rt_%.o: runtime/%.c runtime/*.h
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -O1 -c $< -o $@

# the reference is the oracle, not under test: sanitized, no coverage
$(FUZZ_DIR)/ref_%.o: runtime/%.c runtime/*.h
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -O2 -c $< -o $@

# kernels: -O0 (see above), without OpenMP (one thread per input)
$(FUZZ_DIR)/k_%.o: $(TEST_GEN)/%.c $(TEST_GEN)/%.h runtime/attn_runtime.h
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) $(FUZZ_EDGES) -O0 -I$(TEST_GEN) -c $< -o $@

# rewritten only when the list changes (FUZZ_KERNELS may come from the command line)
$(FUZZ_DIR)/fuzz_kernels.h: FORCE
	@mkdir -p $(FUZZ_DIR)
	@{ echo '/* written by the Makefile (FUZZ_KERNELS): KERNEL(name) per kernel */'; \
	   for n in $(FUZZ_KERNELS); do echo "KERNEL($$n)"; done; } > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

.PHONY: FORCE
FORCE:

$(FUZZ_DIR)/fuzz_npy: tests/fuzz/fuzz_npy.c $(FUZZ_DIR)/rt_attn_npy.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -O1 $^ -o $@ -lm

# fuzz_args links the kernels of FUZZ_KERNELS.  A pattern rule with
# secondary expansion ($$): its prerequisites, and so the set, are expanded
# only when make looks for this target, not each time the Makefile is read.
FUZZ_KERNEL_OBJS = $(addprefix $(FUZZ_DIR)/k_,$(addsuffix .o,$(FUZZ_KERNELS)))
.SECONDEXPANSION:
$(FUZZ_DIR)/fuzz_arg%: tests/fuzz/fuzz_arg%.c $(FUZZ_DIR)/fuzz_kernels.h $(FUZZ_RT_OBJS) $$(FUZZ_KERNEL_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -fno-sanitize-coverage=trace-cmp -O1 \
	  -I$(FUZZ_DIR) $< $(FUZZ_RT_OBJS) $(FUZZ_KERNEL_OBJS) -o $@ -lm

fuzz: bootstrap $(FUZZ_DIR)/fuzz_npy $(FUZZ_DIR)/fuzz_args
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR) fuzz_npy fuzz_args

fuzz-long: bootstrap $(FUZZ_DIR)/fuzz_npy $(FUZZ_DIR)/fuzz_args
	@tests/fuzz/run.sh $(FUZZ_LONG_SECONDS) $(FUZZ_DIR) fuzz_npy fuzz_args
