--- The peak probes of `attngen bench`: the C of attn_bench_probes.c, the
-- loops that measure the machine's f32 FMA peak per ISA, its bf16 dot peak
-- and its int8 dot peak (runtime/tools/attn_bench_peak.c times them and
-- divides), rendered from the ISA modules' spellings, the ones the kernels
-- use: the f32 FMA, zero and broadcast of each ISA (isa/*.lua), the bf16
-- dot of isa/avx512bf16.lua (dp) and the int8 dots of isa/int8.lua.  The
-- build cache compiles the file into its runtime entry with the bench's
-- other parts (build.lua).
--
-- A probe is CHAINS independent chains acc = op(acc, ...) in named
-- registers, iters steps a call, summed into a volatile sink after the loop
-- (nothing is optimized away); it exists in the file under its ISA's
-- architecture guard, with the ISA's target attribute.  The table
-- attn_probes lists them with the operations a step (FLOPs; int8: a
-- product counted as 2), ended by an entry whose loop is NULL.
local isa_mod = require("isa")
local int8 = require("isa.int8")

local M = {}

M.FILE = "attn_bench_probes.c"

--- Chains of the f32 FMA probe: 12 hide an FMA's latency on every x86 and
-- Arm core measured.
M.FMA_CHAINS = 12
--- Chains of the dot probes: vdpbf16ps and vpdpbusd have longer latencies
-- than an FMA; 12 chains reach about 0.93 of the bf16 rate on Zen 5.
M.DOT_CHAINS = 16

-- compilers that know the targets: AVX512_BF16 (GCC 10, clang 9) and
-- AVX-VNNI (GCC 11, clang 12), as the probes' guards
local function compilers(clang, gcc)
  return ("(defined(__clang__) && __clang_major__ >= %d) || "
    .. "(!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= %d)"):format(clang, gcc)
end
local BF16_GUARD, VNNI_GUARD = compilers(9, 10), compilers(12, 11)

local function attr(target) return target and ('__attribute__((target("%s"))) '):format(target) or "" end

--- The C of one probe: a function `name(long iters)` under `target` whose
-- n chains of type vt start from start(i) (distinct values: chains the
-- compiler could prove equal would be merged) and take step(acc) each
-- iteration, after the constant lines `consts`; add(a, b) sums the chains
-- and store(p, v) writes the sum to an array of `lanes` elements of type
-- et, whose sum feeds the sink `sink`.
local function probe(p)
  local L = {}
  local function add(s) L[#L + 1] = s end
  add(("\n/* %s */"):format(p.comment))
  add(("%sstatic void %s(long iters)\n{"):format(attr(p.target), p.name))
  for _, c in ipairs(p.consts) do add("    " .. c .. ";") end
  local accs = {}
  for i = 0, p.n - 1 do accs[#accs + 1] = ("a%d = %s"):format(i, p.start(i)) end
  local rows = {} -- four a line
  for i = 1, #accs, 4 do rows[#rows + 1] = table.concat(accs, ", ", i, math.min(i + 3, #accs)) end
  add(("    %s %s;"):format(p.vt, table.concat(rows, ",\n        ")))
  add(("    %s out[%d], sum = 0;"):format(p.et, p.lanes))
  add("    long i;\n    int l;")
  add("    for (i = 0; i < iters; i++) {")
  for i = 0, p.n - 1 do add(("        a%d = %s;"):format(i, p.step(("a%d"):format(i)))) end
  add("    }")
  local width = 1 -- the chains summed pairwise into a0
  while width < p.n do
    for i = 0, p.n - 1 - width, 2 * width do
      add(("    a%d = %s;"):format(i, p.add(("a%d"):format(i), ("a%d"):format(i + width))))
    end
    width = width * 2
  end
  add(("    %s;"):format(p.store("out", "a0")))
  add(("    for (l = 0; l < %d; l++) sum += out[l];"):format(p.lanes))
  add(("    %s = sum;\n}"):format(p.sink))
  return table.concat(L, "\n")
end

--- The f32 FMA probe of an ISA module: FMA_CHAINS chains of fma(acc, b, c).
local function fma_probe(I)
  return {
    name = "attn_probe_fma__" .. I.name, target = I.target, n = M.FMA_CHAINS, vt = I.vec, et = "float",
    lanes = I.lanes, sink = "attn_probe_f32_sink",
    comment = ("f32 FMA peak, %s: %d chains of fma(acc, b, c), %d lanes"):format(I.name, M.FMA_CHAINS, I.lanes),
    consts = { ("const %s b = %s, c = %s"):format(I.vec, I.set1("0.999999f"), I.set1("1e-6f")) },
    start = function(i) return i == 0 and I.zero() or I.set1(("%d.0f"):format(i)) end,
    step = function(a) return I.fma(a, "b", "c") end,
    add = I.add, store = I.store,
    ops = 2 * M.FMA_CHAINS * I.lanes,
  }
end

--- The bf16 dot probe (isa/avx512bf16.lua's dp): DOT_CHAINS chains of
-- dot(acc, b, b), b the pair (1e-3, 1e-3) in every lane; 16 lanes x 2
-- products an instruction.
local function bf16_probe(I)
  return {
    name = "attn_probe_bf16_dot__" .. I.name, target = I.target, n = M.DOT_CHAINS, vt = I.vec, et = "float",
    lanes = I.lanes, sink = "attn_probe_f32_sink",
    comment = ("bf16 dot peak, %s: %d chains of the bf16 pair dot (vdpbf16ps), %d lanes x 2 products")
      :format(I.name, M.DOT_CHAINS, I.lanes),
    consts = { ("const %s b = %s"):format(I.dp.ivec, I.dp.pairs_of(I.set1("1e-3f"), I.set1("1e-3f"))) },
    start = function(i) return i == 0 and I.zero() or I.set1(("%d.0f"):format(i)) end,
    step = function(a) return I.dp.dot(a, "b", "b") end,
    add = I.add, store = I.store,
    ops = 4 * M.DOT_CHAINS * I.lanes,
  }
end

--- An int8 probe on W-bit integer vectors: DOT_CHAINS chains of step(acc);
-- mode "dp" (vpdpbusd of u = 3 and s = -2 in every byte: W / 8 products an
-- instruction) or "mad" (vpmaddubsw, vpmaddwd, vpaddd: 32).  The "mad" step
-- multiplies the chain's own accumulator (as unsigned bytes) by s: products
-- of constants alone the compiler would hoist out of the loop, leaving the
-- adds.  Its chain (two multiplies and an add) is shorter than the
-- multiplies' throughput over DOT_CHAINS chains, so the probe times that.
local function int8_probe(I, W, mode)
  local P, VI = ("_mm%d_"):format(W), ("__m%di"):format(W)
  local consts = { ("const %s u = %sset1_epi8(3), s = %sset1_epi8(-2)"):format(VI, P, P) }
  if mode == "mad" then
    consts = { ("const %s s = %sset1_epi8(-2)"):format(VI, P), "const __m256i ones = _mm256_set1_epi16(1)" }
  end
  local dp = mode == "dp" and int8.dp_intrinsic(I.int8, W)
  return {
    name = ("attn_probe_int8_%s__%s"):format(mode, I.name),
    target = mode == "dp" and I.int8.dp_target or I.target, n = M.DOT_CHAINS, vt = VI, et = "int32_t",
    lanes = W / 32, sink = "attn_probe_int8_sink",
    comment = ("int8 dot peak, %s: %d chains of %s, %d products an instruction"):format(I.name, M.DOT_CHAINS,
      mode == "dp" and dp or "vpmaddubsw, vpmaddwd and vpaddd", W / 8),
    consts = consts,
    start = function(i) return ("%sset1_epi32(%d)"):format(P, i) end,
    step = function(a)
      if mode == "dp" then return ("%s(%s, u, s)"):format(dp, a) end
      return int8.mad(a, "s", a)
    end,
    add = function(a, b) return ("%sadd_epi32(%s, %s)"):format(P, a, b) end,
    store = function(p, v)
      return W == 512 and ("_mm512_storeu_si512((void *)%s, %s)"):format(p, v)
        or ("_mm256_storeu_si256((__m256i *)(void *)%s, %s)"):format(p, v)
    end,
    ops = 2 * M.DOT_CHAINS * (mode == "dp" and W / 8 or 32),
  }
end

--- The probes, in groups by C guard: { guard, include, {probe, kind, enum} ... }.
local function groups()
  local avx512, avx2 = isa_mod.get("avx512"), isa_mod.get("avx2")
  local bf16, neon = isa_mod.get("avx512bf16"), isa_mod.get("neon")
  local x86 = avx2.arch_guard
  return {
    { guard = x86, include = avx2.include,
      { fma_probe(avx512), "ATTN_PROBE_FMA", avx512.enum },
      { fma_probe(avx2), "ATTN_PROBE_FMA", avx2.enum } },
    { guard = ("(%s) && (%s)"):format(x86, BF16_GUARD),
      { bf16_probe(bf16), "ATTN_PROBE_BF16_DOT", bf16.enum } },
    { guard = ("(%s) && (%s)"):format(x86, VNNI_GUARD),
      { int8_probe(avx512, 512, "dp"), "ATTN_PROBE_INT8_DP", avx512.enum },
      { int8_probe(avx2, 256, "dp"), "ATTN_PROBE_INT8_DP", avx2.enum },
      { int8_probe(avx2, 256, "mad"), "ATTN_PROBE_INT8_MAD", avx2.enum } },
    { guard = neon.arch_guard, include = neon.include,
      { fma_probe(neon), "ATTN_PROBE_FMA", neon.enum } },
  }
end

--- The C text of attn_bench_probes.c.
function M.render()
  local L = { [[
/*
 * attn_bench_probes.c - generated by attngen (generator/probes.lua) from
 * the ISA modules; do not edit.  The loops of the bench's peak probes
 * (runtime/tools/attn_bench.h, attn_probes): independent chains of one
 * instruction, in the spellings the kernels use.
 */
#include <stddef.h>
#include <stdint.h>]] }
  local gs = groups()
  for _, g in ipairs(gs) do
    if g.include then
      L[#L + 1] = ("#if %s\n#include <%s>\n#endif"):format(g.guard, g.include)
    end
  end
  L[#L + 1] = [[

#include "attn_bench.h"

static volatile float attn_probe_f32_sink;
static volatile int32_t attn_probe_int8_sink;]]
  for _, g in ipairs(gs) do
    L[#L + 1] = ("\n#if %s"):format(g.guard)
    for _, e in ipairs(g) do L[#L + 1] = probe(e[1]) end
    L[#L + 1] = ("#endif")
  end
  L[#L + 1] = "\nconst attn_probe attn_probes[] = {"
  for _, g in ipairs(gs) do
    L[#L + 1] = ("#if %s"):format(g.guard)
    for _, e in ipairs(g) do
      L[#L + 1] = ("    { %s, %s, %s, %d },"):format(e[2], e[3], e[1].name, e[1].ops)
    end
    L[#L + 1] = "#endif"
  end
  L[#L + 1] = "    { ATTN_PROBE_FMA, ATTN_ISA_SCALAR, NULL, 0 } /* the end */\n};\n"
  return table.concat(L, "\n")
end

return M
