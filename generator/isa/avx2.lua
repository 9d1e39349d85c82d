--- AVX2 + FMA spelling of the ISA interface (see isa/init.lua for the contract).
local M = {
  name = "avx2",
  enum = "ATTN_ISA_AVX2",
  lanes = 8,
  regs = 16,
  -- micro-kernel blocking: scores MR x NR vectors, P*V MR x NVC vectors;
  -- measured on Zen 5: 4x2 ~100 and 4x2 ~100 GFLOP/s of 135 in L1;
  -- 4x3 P*V spills (~55).  P*V 6x2 with late broadcasts (12 accumulators,
  -- the chunk's 2 V vectors, 1 broadcast: 15 of the 16 registers) on an
  -- AVX2 EPYC: causal prefill H 8 D 128 L 2048 102.5-103.3 ms against
  -- 107.8-110.6 with 4x2; 6x2 with the broadcasts first spills (213 ms)
  qk_block = { mr = 4, nr = 2 },
  pv_block = { mr = 6, nvc = 2, late_bcast = true },
  -- the classic families' loops (planner/classic.lua): half AVX-512's row
  -- and key blocks and context chunk, for half its registers
  classic_block = { mr = 2, nb = 4, ks = 2, ch = 4 },
  -- keys the streaming decode kernel takes a step, by K/V storage type
  -- (planner/sdpa.lua, STREAM_KEYS_BY_CPU; f32: where the runtime picks it)
  stream_keys = { bf16 = 2, f16 = 2, f32 = 2, q8_0 = 2, q4_0 = 2 },
  vec = "__m256",
  -- matmul = "int8" (isa/int8.lua): integer block dots, vpmaddubsw, or
  -- AVX-VNNI's vpdpbusd (VEX) where the CPU has it; keys16: the streaming block
  -- step scores its 16 keys along the lanes, two vectors a row (keys_helpers)
  int8 = { style = "x86", dp_target = "avx2,fma,f16c,avxvnni", dp_bit = "ATTN_INT8_DOT_AVXVNNI",
    dp_dot = "_mm256_dpbusd_avx_epi32", dp_width = 256, keys16 = true },
  arch_guard = "defined(__x86_64__) || defined(_M_X64)",
  include = "immintrin.h",
  target = 'avx2,fma,f16c', -- F16C: f16 storage (every AVX2 CPU has it; the dispatcher checks)
}


-- four floats in registers (isa/init.lua, "q4"), SSE spellings
M.q4 = require("isa.sse_q4")(
  function(v) return ("_mm256_insertf128_ps(_mm256_castps128_ps256(%s), %s, 1)"):format(v, v) end,
  function(s, r) return ("_mm256_permute_ps(%s, 0x%02X)"):format(s, r * 0x55) end,
  function(a, b, c, d) return ("attn_hsum4q__avx2(%s, %s, %s, %s)"):format(a, b, c, d) end)

function M.zero() return "_mm256_setzero_ps()" end
function M.set1(x) return ("_mm256_set1_ps(%s)"):format(x) end
function M.load(p) return ("_mm256_loadu_ps(%s)"):format(p) end
--- a block's f16 scale (a uint16_t bit pattern) as f32 in every lane: vcvtph2ps (F16C)
function M.block_scale(x) return ("_mm256_cvtph_ps(_mm_set1_epi16((short)%s))"):format(x) end
--- 8 q4_0 codes (the nibbles at bit `shift` of the 8 bytes at p) minus 8 as f32
function M.block_codes_u4(p, shift)
  return ("_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(_mm256_srl_epi32(_mm256_cvtepu8_epi32("
    .. "_mm_loadl_epi64((const __m128i *)(const void *)(%s))), _mm_cvtsi32_si128(%s)), _mm256_set1_epi32(15)), "
    .. "_mm256_set1_epi32(8)))"):format(p, shift)
end
--- 8 bytes of a q4_0 block at p widened to 32-bit lanes, once for both their
-- vectors of codes (block_u4_codes: the low nibbles, values o..o+7, and the
-- high ones, o+16..o+23)
M.block_u4_ivec = "__m256i"
function M.block_u4_bytes(p)
  return ("_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(%s)))"):format(p)
end
function M.block_u4_codes(z, high)
  local n = high and ("_mm256_srli_epi32(%s, 4)"):format(z) or ("_mm256_and_si256(%s, _mm256_set1_epi32(15))"):format(z)
  return ("_mm256_cvtepi32_ps(_mm256_sub_epi32(%s, _mm256_set1_epi32(8)))"):format(n)
end
--- 8 int8 codes of a q8_0 block at p as f32
function M.block_codes_i8(p)
  return ("_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(%s))))"):format(p)
end
function M.store(p, v) return ("_mm256_storeu_ps(%s, %s)"):format(p, v) end
-- a non-temporal store (p aligned to the vector) and the fence that orders such stores
function M.stream(p, v) return ("_mm256_stream_ps(%s, %s)"):format(p, v) end
function M.stream_fence() return "_mm_sfence()" end

local function lane_mask(n)
  local t = {}
  for i = 1, 8 do t[9 - i] = i <= n and "-1" or "0" end
  return "_mm256_set_epi32(" .. table.concat(t, ", ") .. ")"
end
function M.loadn(p, n) return ("_mm256_maskload_ps(%s, %s)"):format(p, lane_mask(n)) end
function M.storen(p, v, n) return ("_mm256_maskstore_ps(%s, %s, %s)"):format(p, lane_mask(n), v) end
function M.add(a, b) return ("_mm256_add_ps(%s, %s)"):format(a, b) end
function M.sub(a, b) return ("_mm256_sub_ps(%s, %s)"):format(a, b) end
function M.mul(a, b) return ("_mm256_mul_ps(%s, %s)"):format(a, b) end
function M.div(a, b) return ("_mm256_div_ps(%s, %s)"):format(a, b) end
function M.fma(a, b, c) return ("_mm256_fmadd_ps(%s, %s, %s)"):format(a, b, c) end
function M.max(a, b) return ("_mm256_max_ps(%s, %s)"):format(a, b) end
function M.min(a, b) return ("_mm256_min_ps(%s, %s)"):format(a, b) end
function M.select_lt(a, b, x, y)
  return ("_mm256_blendv_ps(%s, %s, _mm256_cmp_ps(%s, %s, _CMP_LT_OQ))"):format(y, x, a, b)
end
function M.round(v)
  return ("_mm256_round_ps(%s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"):format(v)
end
function M.pow2i(v)
  return ("_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(%s), "
    .. "_mm256_set1_epi32(127)), 23))"):format(v)
end
function M.iota() return "_mm256_set_ps(7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f, 0.0f)" end
-- Horizontal reductions are small static helpers (see M.helpers).
function M.reduce_add(v) return ("attn_hadd__avx2(%s)"):format(v) end
function M.reduce_max(v) return ("attn_hmax__avx2(%s)"):format(v) end
-- out[0..3] = the sums of a, b, c, d (a statement)
function M.hsum4(a, b, c, d, out) return ("attn_hsum4__avx2(%s, %s, %s, %s, %s)"):format(a, b, c, d, out) end
-- Rows along pairs of lanes (isa/init.lua, "set2"): four rows, two values of D each.
function M.set2(p) return ("attn_set2__avx2(%s)"):format(p) end
function M.sum_pairs(x, y, s0, s1) return ("attn_sum_pairs__avx2(%s, %s, %s, %s)"):format(x, y, s0, s1) end
-- transpose(src, ss, dst, ds): a statement; the 8 x 8 block of src (rows ss
-- floats apart) goes to dst transposed (rows ds apart).
function M.transpose(src, ss, dst, ds)
  return ("attn_transpose8__avx2(%s, %s, %s, %s)"):format(src, ss, dst, ds)
end

-- Storage types (isa/init.lua, "Storage types"): 8 lanes of bf16 or f16
-- are one 128-bit load.  bf16 widens by a shift; f16 by vcvtph2ps (F16C).
-- Narrowing: f16 by vcvtps2ph (round to nearest even, NaN quiet, overflow
-- to inf), bf16 in integer ops (attn_narrow_bf16__avx2).  Tails go
-- through an 8-element buffer.
local tails16 = require("isa.tails16")
local function ld128(p) return ("_mm_loadu_si128((const __m128i *)(%s))"):format(p) end
local function st128(p, x) return ("_mm_storeu_si128((__m128i *)(%s), %s)"):format(p, x) end
local RNE = "_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC"
local function widen_bf16(x)
  return ("_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(%s), 16))"):format(x)
end
local function widen_f16(x) return ("_mm256_cvtph_ps(%s)"):format(x) end
local SPELL = {
  bf16 = {
    load = function(p) return widen_bf16(ld128(p)) end,
    store = function(p, v) return st128(p, ("attn_narrow_bf16__avx2(%s)"):format(v)) end,
  },
  f16 = {
    load = function(p) return widen_f16(ld128(p)) end,
    store = function(p, v) return st128(p, ("_mm256_cvtps_ph(%s, %s)"):format(v, RNE)) end,
  },
}
M.storage = tails16.storage("avx2", M.set1, SPELL)

local function storage_helpers(dtypes)
  local out = {}
  if dtypes.bf16 then
    out[#out + 1] = [[

/* f32 lanes to bf16, rounded to nearest even; a NaN stays a quiet NaN. */
ATTR static inline __m128i attn_narrow_bf16__avx2(__m256 v)
{
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}]]
  end
  for _, dt in ipairs({ "bf16", "f16" }) do
    if dtypes[dt] then
      out[#out + 1] = tails16.tails("avx2", "__m256", 8, dt, SPELL)
    end
  end
  return table.concat(out)
end

local PAIRS_TEXT = [[

/* The floats p[0] and p[1] in every pair of lanes: one 64-bit broadcast, the
 * integer one (vpbroadcastq), as into 512-bit vectors. */
ATTR static inline __m256 SET2(const float *p)
{
    long long t;
    memcpy(&t, p, sizeof t);
    return _mm256_castsi256_ps(_mm256_set1_epi64x(t));
}

/* x and y hold 4 rows' sums in lane pairs (row r in lanes 2r and 2r + 1): the
 * rows' totals of x go to s0[0..3], of y to s1[0..3]. */
ATTR static inline void SUM_PAIRS(__m256 x, __m256 y, float *s0, float *s1)
{
    const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xDD));
    const __m256 t = _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
    _mm_storeu_ps(s0, _mm256_castps256_ps128(t));
    _mm_storeu_ps(s1, _mm256_extractf128_ps(t, 1));
}
]]

--- The C text of set2 and sum_pairs on 256-bit vectors under the attribute
-- attr, named set2 and sum_pairs: this variant's helpers, and the AVX-512
-- variant's on its half-width vectors (isa/avx512.lua, "half").
function M.pairs_helpers(attr, set2, sum_pairs)
  return (PAIRS_TEXT:gsub("ATTR ", attr):gsub("SET2", set2):gsub("SUM_PAIRS", sum_pairs))
end

function M.helpers(attr, opts)
  local text = (([[
ATTR static inline float attn_hadd__avx2(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}
ATTR static inline __m128 attn_hsum4q__avx2(__m256 x0, __m256 x1, __m256 x2, __m256 x3)
{
    const __m256 s01 = _mm256_add_ps(_mm256_unpacklo_ps(x0, x1), _mm256_unpackhi_ps(x0, x1));
    const __m256 s23 = _mm256_add_ps(_mm256_unpacklo_ps(x2, x3), _mm256_unpackhi_ps(x2, x3));
    const __m256 s = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, 0x44), _mm256_shuffle_ps(s01, s23, 0xEE));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}
ATTR static inline void attn_hsum4__avx2(__m256 x0, __m256 x1, __m256 x2, __m256 x3, float *out)
{
    _mm_storeu_ps(out, attn_hsum4q__avx2(x0, x1, x2, x3));
}
ATTR static inline float attn_hmax__avx2(__m256 v)
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}
]]):gsub("ATTR ", attr))
  if opts and opts.storage then text = text .. storage_helpers(opts.storage):gsub("ATTR ", attr) end
  if opts and opts.pairs then
    text = text .. M.pairs_helpers(attr, "attn_set2__avx2", "attn_sum_pairs__avx2")
  end
  if opts and opts.transpose then
    text = text .. (([[

/* dst[d][c] = src[c][d] for an 8 x 8 block (src rows ss apart, dst rows ds apart):
 * 32-bit and 64-bit interleaves, then the 128-bit halves. */
ATTR static inline void attn_transpose8__avx2(const float *src, int64_t ss, float *dst, int64_t ds)
{
    const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss);
    const __m256 r2 = _mm256_loadu_ps(src + 2 * ss), r3 = _mm256_loadu_ps(src + 3 * ss);
    const __m256 r4 = _mm256_loadu_ps(src + 4 * ss), r5 = _mm256_loadu_ps(src + 5 * ss);
    const __m256 r6 = _mm256_loadu_ps(src + 6 * ss), r7 = _mm256_loadu_ps(src + 7 * ss);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
                 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
                 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
                 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}
]]):gsub("ATTR ", attr))
  end
  return text
end

return M
