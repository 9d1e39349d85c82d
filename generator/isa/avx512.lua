--- AVX-512F spelling of the ISA interface (see isa/init.lua for the contract).
--- Philox4x32-10 for dropout (AVX-512F), on independent streams of 8
-- counters whose rounds overlap: 4 streams (32 counters, 128 keys) a call,
-- or 2 (64 keys) for a short range.  A counter takes one 64-bit lane, each
-- of its four words in the low half of the lane's vector: vpmuludq then
-- gives the whole 64-bit product, the high word one shift away, and
-- vpternlogd does the three-way xor; the high halves hold garbage that
-- vpmuludq ignores.  Only the counter's first word differs between lanes,
-- so rounds 0 and 1 are half scalar.  At the end, two words of a counter
-- are paired in its lane and two counters' pairs unpacked side by side, so
-- that a vector holds 16 keys in order (key 4 l + w is word w of counter
-- l): hence the counters sit in the lanes in the order 0 4 1 5 2 6 3 7.
-- Measured on Zen 5 (causal L 4096, H 8, D 128, p = 0.1, 1 thread): about
-- 1.10x the time without dropout, from 1.33x with 16 counters in 32-bit
-- lanes (even and odd products blended back) and the dropped keys zeroed
-- one by one.
local avx2 = require("isa.avx2") -- the spelling of half-width vectors (M.half)
local PHILOX_STREAMS = { "a", "b", "c", "d" } -- the streams' letters in the C
local PHILOX_CALLS = { 32, 16 } -- counters a call, the larger first

--- The C of the Philox helper on n counters (n / 8 streams).  @STREAMS(...)
-- repeats its lines once per stream: %s the stream's letter, @I its index,
-- @G its first counter; @ROUND(rd) is a round, all streams.
local function philox_drop(n)
  local text = [[

/* Which of the KEYS keys 4 g .. 4 g + LAST are dropped: bit q of drop[u] is
 * set when key 4 g + 64 u + q, word q & 3 of Philox4x32-10(counter =
 * (g + 16 u + q / 4, ci, ch, co), key = (k0, k1)), is below t (the
 * runtime's attn_philox4x32_10, N counters at a time). */
ATTR static inline void attn_philox_dropKEYS__ISA(uint32_t g, uint32_t ci, uint32_t ch, uint32_t co,
        uint32_t k0, uint32_t k1, uint32_t t, uint64_t *drop)
{
    enum { XOR3 = 0x96 }; /* vpternlogd's truth table of a ^ b ^ c */
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u; /* Philox4x32 */
    const __m512i m0 = _mm512_set1_epi64(M0), m1 = _mm512_set1_epi64(M1);
    const __m512i lane = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0); /* the counter of each lane */
    const __m512i vt = _mm512_set1_epi32((int)t);
    /* Rounds 0 and 1: of the counter (x0, ci, ch, co) only x0 differs between the lanes, so
       the products ch M1 (round 0) and y M0 (round 1, y = hi(ch M1) ^ ci ^ k0) are scalars;
       per lane are left x0 M0, then z M1 with z = hi(x0 M0) ^ co ^ k1. */
    const uint64_t q2 = (uint64_t)ch * M1, q0 = (uint64_t)((uint32_t)(q2 >> 32) ^ ci ^ k0) * M0;
    const __m512i r0 = _mm512_set1_epi32((int)(co ^ k1)); /* z = hi(x0 M0) ^ r0 */
    const __m512i r1a = _mm512_set1_epi32((int)((uint32_t)q2 ^ (k0 + W0))); /* round 1's x0 = hi(z M1) ^ r1a */
    const __m512i r1b = _mm512_set1_epi32((int)((uint32_t)(q0 >> 32) ^ (k1 + W1))); /* its x2 = lo(x0 M0) ^ r1b */
    const __m512i x3 = _mm512_set1_epi32((int)(uint32_t)q0); /* its x3 */
@STREAMS(    __m512i %s0 = _mm512_add_epi64(_mm512_set1_epi64(@G), lane), %s1, %s2, %s3;)
    uint32_t keys[STREAMS]; /* bit q of keys[s]: key 32 s + q (stream s) is dropped */
    int rd, s;
@STREAMS(    { /* rounds 0 and 1 of stream %s */
        const __m512i p0 = _mm512_mul_epu32(%s0, m0);
        const __m512i p2 = _mm512_mul_epu32(_mm512_xor_si512(_mm512_srli_epi64(p0, 32), r0), m1);
        %s0 = _mm512_xor_si512(_mm512_srli_epi64(p2, 32), r1a);
        %s1 = p2;
        %s2 = _mm512_xor_si512(p0, r1b);
        %s3 = x3;
    })
    for (rd = 2; rd < 10; rd += 2) { /* two rounds a step: fewer register copies */
@ROUND(rd)
@ROUND(rd + 1)
    }
@STREAMS(    { /* words (0, 1) and (2, 3) of each counter in its lane, then counters 0-3 and 4-7 */
        const __m512i w01 = _mm512_mask_shuffle_epi32(%s0, (__mmask16)0xAAAA, %s1, _MM_PERM_CCAA);
        const __m512i w23 = _mm512_mask_shuffle_epi32(%s2, (__mmask16)0xAAAA, %s3, _MM_PERM_CCAA);
        keys[@I] = (uint32_t)_mm512_cmplt_epu32_mask(_mm512_unpacklo_epi64(w01, w23), vt)
            | (uint32_t)_mm512_cmplt_epu32_mask(_mm512_unpackhi_epi64(w01, w23), vt) << 16;
    })
    for (s = 0; s < STREAMS; s += 2) drop[s / 2] = keys[s] | (uint64_t)keys[s + 1] << 32;
}]]
  local round = [[
        {
            const __m512i ka = _mm512_set1_epi32((int)(k0 + (uint32_t)(RD) * W0));
            const __m512i kb = _mm512_set1_epi32((int)(k1 + (uint32_t)(RD) * W1));
@STREAMS(            const __m512i p%s0 = _mm512_mul_epu32(%s0, m0), p%s2 = _mm512_mul_epu32(%s2, m1);)
@STREAMS(            %s0 = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p%s2, 32), %s1, ka, XOR3);
            %s2 = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p%s0, 32), %s3, kb, XOR3);
            %s1 = p%s2;
            %s3 = p%s0;)
        }]]
  local nstreams = math.floor(n / 8)
  text = text:gsub("@ROUND%((.-)%)", function(rd) return (round:gsub("RD", rd)) end)
  text = text:gsub("@STREAMS(%b())", function(fmt)
    local out = {}
    for i = 1, nstreams do
      local g = i == 1 and "g" or ("g + %du"):format(8 * (i - 1))
      out[#out + 1] = fmt:sub(2, -2):gsub("%%s", PHILOX_STREAMS[i]):gsub("@I", tostring(i - 1)):gsub("@G", g)
    end
    return table.concat(out, "\n")
  end)
  return (text:gsub("LAST", tostring(4 * n - 1)):gsub("KEYS", tostring(4 * n)):gsub("STREAMS", tostring(nstreams))
    :gsub("N counters", n .. " counters"))
end

local function build(name, enum, target)
  local M = {
    name = name,
    enum = enum,
    lanes = 16,
    regs = 32,
    -- micro-kernel blocking: scores MR x NR vectors, P*V MR x NVC vectors;
    -- measured on Zen 5: 8x2 ~230 and 6x4 ~230 GFLOP/s of 269 in L1,
    -- where 6x4 scores spill (~90-186) and 3x8 P*V re-loads V (~100)
    qk_block = { mr = 8, nr = 2 },
    pv_block = { mr = 6, nvc = 4 },
    -- the decode path's P*V of 7-8 rows: 8 x 3 vectors (late broadcasts, 28
    -- registers) reads each V row once for 8 rows where 6 x 4 reads it for 6;
    -- Llama-3-8B's 32 rows a kv head at Lq = 8: 4 calls a block instead of 6
    pv_wide = { mr = 8, nvc = 3, late_bcast = true },
    -- the classic families' loops (planner/classic.lua): 4 x 4 dot
    -- products, 4 tanh scores in flight, context sums 8 vectors a row
    classic_block = { mr = 4, nb = 4, ks = 4, ch = 8 },
    -- keys the streaming decode kernel takes a step, by K/V storage type
    -- (the measurements: planner/sdpa.lua, STREAM_KEYS_BY_CPU; f32: where the
    -- runtime picks it, attn_cpu()->decode_key_pairs)
    stream_keys = { bf16 = 2, f16 = 2, f32 = 2, q8_0 = 2, q4_0 = 2 },
    -- matmul = "int8" (isa/int8.lua): integer block dots, AVX512-VNNI's
    -- vpdpbusd on 512-bit vectors (two blocks a vector) where the CPU has it
    -- (with VL and BW), else vpmaddubsw on 256-bit ones (AVX2's, which every
    -- AVX-512 CPU runs); keys16: the streaming block step scores its 16
    -- keys along the lanes, a row's in one vector (isa/int8.lua, keys_helpers)
    int8 = { style = "x86", dp_target = "avx512f,avx512bw,avx512vl,avx512vnni,fma", dp_bit = "ATTN_INT8_DOT_AVX512VNNI",
      dp_dot = "_mm256_dpbusd_epi32", dp_width = 512, rows = 8, keys16 = true },
    vec = "__m512",
    arch_guard = "defined(__x86_64__) || defined(_M_X64)",
    include = "immintrin.h",
    target = target,
  }


  -- four floats in registers (isa/init.lua, "q4"), SSE spellings
  M.q4 = require("isa.sse_q4")(
    function(v) return ("_mm512_broadcast_f32x4(%s)"):format(v) end,
    function(s, r) return ("_mm512_permute_ps(%s, 0x%02X)"):format(s, r * 0x55) end,
    function(a, b, c, d) return ("attn_hsum4q__" .. name .. "(%s, %s, %s, %s)"):format(a, b, c, d) end)

  function M.zero() return "_mm512_setzero_ps()" end
  function M.set1(x) return ("_mm512_set1_ps(%s)"):format(x) end
  function M.load(p) return ("_mm512_loadu_ps(%s)"):format(p) end
  --- a block's f16 scale (a uint16_t bit pattern) as f32 in every lane: vcvtph2ps
  function M.block_scale(x) return ("_mm512_cvtph_ps(_mm256_set1_epi16((short)%s))"):format(x) end
  --- 16 q4_0 codes (the nibbles at bit `shift` of the 16 bytes at p) minus 8 as f32
  function M.block_codes_u4(p, shift)
    return ("_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(_mm512_srl_epi32(_mm512_cvtepu8_epi32("
      .. "_mm_loadu_si128((const __m128i *)(const void *)(%s))), _mm_cvtsi32_si128(%s)), _mm512_set1_epi32(15)), "
      .. "_mm512_set1_epi32(8)))"):format(p, shift)
  end
  --- a q4_0 block's 16 bytes at p widened to 32-bit lanes, once for both its
  -- vectors of codes (block_u4_codes: the low nibbles, values 0..15, and the
  -- high ones, 16..31)
  M.block_u4_ivec = "__m512i"
  function M.block_u4_bytes(p)
    return ("_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(%s)))"):format(p)
  end
  function M.block_u4_codes(z, high)
    local n = high and ("_mm512_srli_epi32(%s, 4)"):format(z)
      or ("_mm512_and_si512(%s, _mm512_set1_epi32(15))"):format(z)
    return ("_mm512_cvtepi32_ps(_mm512_sub_epi32(%s, _mm512_set1_epi32(8)))"):format(n)
  end
  --- 16 int8 codes of a q8_0 block at p as f32
  function M.block_codes_i8(p)
    return ("_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(%s))))"):format(p)
  end
  function M.store(p, v) return ("_mm512_storeu_ps(%s, %s)"):format(p, v) end
  -- a non-temporal store (p aligned to the vector) and the fence that orders such stores
  function M.stream(p, v) return ("_mm512_stream_ps(%s, %s)"):format(p, v) end
  function M.stream_fence() return "_mm_sfence()" end
  -- First n lanes (a compile-time constant 0 < n < lanes); the rest read as 0
  -- and are never touched in memory.
  function M.loadn(p, n)
    return ("_mm512_maskz_loadu_ps((__mmask16)0x%04X, %s)"):format(2 ^ n - 1, p)
  end
  function M.storen(p, v, n)
    return ("_mm512_mask_storeu_ps(%s, (__mmask16)0x%04X, %s)"):format(p, 2 ^ n - 1, v)
  end
  function M.add(a, b) return ("_mm512_add_ps(%s, %s)"):format(a, b) end
  function M.sub(a, b) return ("_mm512_sub_ps(%s, %s)"):format(a, b) end
  function M.mul(a, b) return ("_mm512_mul_ps(%s, %s)"):format(a, b) end
  function M.div(a, b) return ("_mm512_div_ps(%s, %s)"):format(a, b) end
  function M.fma(a, b, c) return ("_mm512_fmadd_ps(%s, %s, %s)"):format(a, b, c) end
  -- max/min return b when either is NaN, so callers put the value to keep
  -- NaN-propagating second.
  function M.max(a, b) return ("_mm512_max_ps(%s, %s)"):format(a, b) end
  function M.min(a, b) return ("_mm512_min_ps(%s, %s)"):format(a, b) end
  -- (a < b) ? x : y per lane
  function M.select_lt(a, b, x, y)
    return ("_mm512_mask_blend_ps(_mm512_cmp_ps_mask(%s, %s, _CMP_LT_OQ), %s, %s)"):format(a, b, y, x)
  end
  function M.round(v)
    return ("_mm512_roundscale_ps(%s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"):format(v)
  end
  -- 2^n for a vector holding integral values in [-127, 127]; -127 gives 0.
  function M.pow2i(v)
    return ("_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(%s), "
      .. "_mm512_set1_epi32(127)), 23))"):format(v)
  end
  -- y 2^n for n holding integral values (vscalefps: exact, rounded once where the
  -- result is subnormal, 0 below half the least subnormal, inf past the largest float)
  function M.scale(y, n) return ("_mm512_scalef_ps(%s, %s)"):format(y, n) end
  -- {0, 1, ..., lanes-1}
  function M.iota()
    return "_mm512_set_ps(15.0f, 14.0f, 13.0f, 12.0f, 11.0f, 10.0f, 9.0f, 8.0f, "
      .. "7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f, 0.0f)"
  end
  function M.reduce_add(v) return ("_mm512_reduce_add_ps(%s)"):format(v) end
  function M.reduce_max(v) return ("_mm512_reduce_max_ps(%s)"):format(v) end
  -- out[0..3] = the sums of a, b, c, d (a statement)
  function M.hsum4(a, b, c, d, out)
    return ("attn_hsum4__" .. name .. "(%s, %s, %s, %s, %s)"):format(a, b, c, d, out)
  end
  -- Rows along pairs of lanes (isa/init.lua, "set2"): eight rows, two values of D each.
  function M.set2(p) return ("attn_set2__" .. name .. "(%s)"):format(p) end
  function M.sum_pairs(x, y, s0, s1)
    return ("attn_sum_pairs__" .. name .. "(%s, %s, %s, %s)"):format(x, y, s0, s1)
  end
  -- One vector of rows a kv head scored in pairs of D too, in two vectors
  -- (isa/init.lua, "pairs_wide"): the lanes kernel's broadcast a FMA bound it
  -- by the loads (docs/decode.md).
  M.pairs_wide = true
  -- Half-width vectors (isa/init.lua, "half"): the AVX2 spelling of 256-bit
  -- vectors, which every AVX-512 CPU runs, with the pair helpers defined
  -- under this variant's target and names (helpers(attr, {half_pairs = true})).
  M.half = { vec = avx2.vec, lanes = avx2.lanes, zero = avx2.zero, load = avx2.load, fma = avx2.fma,
    set2 = function(p) return ("attn_set2_half__" .. name .. "(%s)"):format(p) end,
    sum_pairs = function(x, y, s0, s1)
      return ("attn_sum_pairs_half__" .. name .. "(%s, %s, %s, %s)"):format(x, y, s0, s1)
    end }
  -- transpose(src, ss, dst, ds): a statement; the 16 x 16 block of src (rows ss
  -- floats apart) goes to dst transposed (rows ds apart).
  function M.transpose(src, ss, dst, ds)
    return ("attn_transpose16__" .. name .. "(%s, %s, %s, %s)"):format(src, ss, dst, ds)
  end

  -- Storage types (isa/init.lua, "Storage types"): 16 lanes of bf16 or f16
  -- are one 256-bit load.  bf16 widens by a shift; f16 by vcvtph2ps
  -- (AVX-512F).  Narrowing: f16 by vcvtps2ph (round to nearest even, NaN
  -- quiet, overflow to inf), bf16 in integer ops (attn_narrow_bf16__avx512).
  -- Tails go through a 16-element buffer (no AVX512BW masked 16-bit moves).
  local tails16 = require("isa.tails16")
  local function ld256(p) return ("_mm256_loadu_si256((const __m256i *)(%s))"):format(p) end
  local function st256(p, x) return ("_mm256_storeu_si256((__m256i *)(%s), %s)"):format(p, x) end
  local RNE = "_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC"
  local function widen_bf16(x)
    return ("_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(%s), 16))"):format(x)
  end
  local function widen_f16(x) return ("_mm512_cvtph_ps(%s)"):format(x) end
  local SPELL = {
    bf16 = {
      load = function(p) return widen_bf16(ld256(p)) end,
      store = function(p, v) return st256(p, ("attn_narrow_bf16__" .. name .. "(%s)"):format(v)) end,
    },
    f16 = {
      load = function(p) return widen_f16(ld256(p)) end,
      store = function(p, v) return st256(p, ("_mm512_cvtps_ph(%s, %s)"):format(v, RNE)) end,
    },
  }
  M.storage = tails16.storage(name, M.set1, SPELL)

  --- C text of the storage-type helpers a file needs (dtypes: a set).
  local function storage_helpers(dtypes)
    local out = {}
    if dtypes.bf16 then
      out[#out + 1] = [[

/* f32 lanes to bf16, rounded to nearest even; a NaN stays a quiet NaN. */
ATTR static inline __m256i attn_narrow_bf16__ISA(__m512 v)
{
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                              _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}]]
    end
    for _, dt in ipairs({ "bf16", "f16" }) do
      if dtypes[dt] then
        out[#out + 1] = tails16.tails(name, "__m512", 16, dt, SPELL)
      end
    end
    return (table.concat(out):gsub("__ISA%f[%W]", "__" .. name))
  end

  --- C text of the 16 x 16 transpose, fully unrolled: 32-bit, 64-bit and two
  -- 128-bit-lane interleaves (64 shuffles for 256 floats).
  local function transpose16()
    local L = {}
    local function add(fmt, ...) L[#L + 1] = "    " .. fmt:format(...) end
    local function names(prefix)
      local t = {}
      for i = 0, 15 do t[#t + 1] = prefix .. i end
      return table.concat(t, ", ")
    end
    add("__m512 %s;", names("r"))
    add("__m512 %s;", names("t"))
    for i = 0, 15 do add("r%d = _mm512_loadu_ps(src + %d * ss);", i, i) end
    for i = 0, 15, 2 do
      add("t%d = _mm512_unpacklo_ps(r%d, r%d);", i, i, i + 1)
      add("t%d = _mm512_unpackhi_ps(r%d, r%d);", i + 1, i, i + 1)
    end
    local function pd(op, a, b)
      return ("_mm512_castpd_ps(_mm512_%s_pd(_mm512_castps_pd(t%d), _mm512_castps_pd(t%d)))"):format(op, a, b)
    end
    for i = 0, 15, 4 do
      add("r%d = %s;", i, pd("unpacklo", i, i + 2))
      add("r%d = %s;", i + 1, pd("unpackhi", i, i + 2))
      add("r%d = %s;", i + 2, pd("unpacklo", i + 1, i + 3))
      add("r%d = %s;", i + 3, pd("unpackhi", i + 1, i + 3))
    end
    for i = 0, 3 do
      add("t%d = _mm512_shuffle_f32x4(r%d, r%d, 0x88);", i, i, i + 4)
      add("t%d = _mm512_shuffle_f32x4(r%d, r%d, 0xDD);", i + 4, i, i + 4)
      add("t%d = _mm512_shuffle_f32x4(r%d, r%d, 0x88);", i + 8, i + 8, i + 12)
      add("t%d = _mm512_shuffle_f32x4(r%d, r%d, 0xDD);", i + 12, i + 8, i + 12)
    end
    for i = 0, 7 do
      add("_mm512_storeu_ps(dst + %d * ds, _mm512_shuffle_f32x4(t%d, t%d, 0x88));", i, i, i + 8)
      add("_mm512_storeu_ps(dst + %d * ds, _mm512_shuffle_f32x4(t%d, t%d, 0xDD));", i + 8, i, i + 8)
    end
    return table.concat(L, "\n")
  end

  function M.helpers(attr, opts)
    local text = (([[
/* The lane sums of x0..x3 as one __m128: pairwise adds within 128-bit
 * lanes, then across them. */
ATTR static inline __m128 attn_hsum4q__ISA(__m512 x0, __m512 x1, __m512 x2, __m512 x3)
{
    const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(x0, x1), _mm512_unpackhi_ps(x0, x1));
    const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(x2, x3), _mm512_unpackhi_ps(x2, x3));
    __m512 s = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, 0x44), _mm512_shuffle_ps(s01, s23, 0xEE));
    s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, 0x4E));
    s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, 0xB1));
    return _mm512_castps512_ps128(s);
}

/* out[0..3] = the lane sums of x0..x3. */
ATTR static inline void attn_hsum4__ISA(__m512 x0, __m512 x1, __m512 x2, __m512 x3, float *out)
{
    _mm_storeu_ps(out, attn_hsum4q__ISA(x0, x1, x2, x3));
}
]]):gsub("ATTR ", attr))
    if opts and opts.storage then text = text .. storage_helpers(opts.storage):gsub("ATTR ", attr) end
    if opts and opts.transpose then
      text = text .. (([[

/* dst[d][c] = src[c][d] for a 16 x 16 block (src rows ss apart, dst rows ds apart). */
ATTR static inline void attn_transpose16__ISA(const float *src, int64_t ss, float *dst, int64_t ds)
{
TRANSPOSE
}
]]):gsub("ATTR ", attr):gsub("TRANSPOSE", function() return transpose16() end))
    end
    if opts and opts.pairs then
      text = text .. (([[

/* The floats p[0] and p[1] in every pair of lanes: one 64-bit broadcast, the
 * integer one (vpbroadcastq; from memory, AMD Zen 4 runs vbroadcastsd into a
 * 512-bit register as more than a load: the decode scores of Llama-3-8B at
 * Lq = 2 took 10% longer with it). */
ATTR static inline __m512 attn_set2__ISA(const float *p)
{
    long long t;
    memcpy(&t, p, sizeof t);
    return _mm512_castsi512_ps(_mm512_set1_epi64(t));
}

/* x and y hold 8 rows' sums in lane pairs (row r in lanes 2r and 2r + 1): the
 * rows' totals of x go to s0[0..7], of y to s1[0..7].  Within 128-bit lanes the
 * even and odd lanes of x and y are added (rows 2q, 2q + 1 of x, then of y),
 * then one permute puts x's rows in the low half and y's in the high. */
ATTR static inline void attn_sum_pairs__ISA(__m512 x, __m512 y, float *s0, float *s1)
{
    const __m512i rows = _mm512_set_epi32(15, 14, 11, 10, 7, 6, 3, 2, 13, 12, 9, 8, 5, 4, 1, 0);
    const __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xDD));
    const __m512 t = _mm512_permutexvar_ps(rows, sums);
    _mm256_storeu_ps(s0, _mm512_castps512_ps256(t));
    _mm256_storeu_ps(s1, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
}
]]):gsub("ATTR ", attr))
    end
    if opts and opts.half_pairs then
      text = text .. avx2.pairs_helpers(attr, "attn_set2_half__ISA", "attn_sum_pairs_half__ISA")
    end
    if opts and opts.dropout then
      for _, n in ipairs(PHILOX_CALLS) do text = text .. philox_drop(n):gsub("ATTR ", attr) end
    end
    return (text:gsub("__ISA%f[%W]", "__" .. name))
  end

  --- Dropout (templates/lib/dropout.c.tmpl): a statement storing into
  -- drop[0 .. n / 16 - 1] which of the 4 n keys of the n Philox counters
  -- from g are dropped, 64 keys a word (helpers above); n is one of
  -- philox_counters.
  function M.philox_drop(n, g, ci, ch, co, k0, k1, t, drop)
    return ("attn_philox_drop%d__%s(%s, %s, %s, %s, %s, %s, %s, %s)"):format(4 * n, name, g, ci, ch, co, k0, k1, t,
      drop)
  end
  M.philox_counters = PHILOX_CALLS

  --- A statement: 0 into the f32 lanes p[q] whose bit q of the 16-bit mask
  -- m is set, no other lane touched in memory (dropout's dropped keys).
  function M.zero_where(p, m)
    return ("_mm512_mask_storeu_ps(%s, (__mmask16)(%s), _mm512_setzero_ps())"):format(p, m)
  end

  return M
end

--- The AVX-512F module; build() makes the modules that extend it
-- (isa/avx512bf16.lua) spell the same code under their own name, so that
-- both variants can sit in one file.
local M = build("avx512", "ATTN_ISA_AVX512", "avx512f,fma") -- every AVX-512F CPU has FMA3 (the dispatcher checks both)
M.build = build
return M

