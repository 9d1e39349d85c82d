--- AVX-512 with the BF16 extension (AVX512_BF16; Zen 4 and later, Cooper
-- Lake and Sapphire Rapids and later): everything of isa/avx512.lua under
-- its own name, plus the bf16 dot product of the prefill path of configs
-- with matmul = "bf16".
--
-- vdpbf16ps multiplies pairs of bf16 values and adds both products to an f32
-- lane: acc[i] += a[2i] b[2i] + a[2i+1] b[2i+1].  The operands of a
-- product are therefore packed as pairs along its reduction dimension: Q and
-- K^T as pairs of head dims, P and V as pairs of keys (docs/kernels.md).
-- The dispatcher requires AVX512F, BW, VL and BF16 (every CPU with BF16 has
-- the other three).
local M = require("isa.avx512").build("avx512bf16", "ATTN_ISA_AVX512BF16",
  "avx512f,avx512bw,avx512vl,avx512bf16,fma")

--- Only configs with matmul = "bf16" get this variant (the schema's default
-- ISA list leaves it out of the others, where it would be avx512 again).
M.matmul = "bf16"

--- The ISA whose code this one's extends: a file with both variants lets
-- this one call that one's decode path (planner/sdpa.lua).
M.base = "avx512"

--- Its streaming decode kernel takes one key a step (unmeasured: where the
-- file has avx512 too, this variant calls that one's decode path).
M.stream_keys = nil

--- The pair interface of the bf16 dot-product micro-kernels (lib/qkdp,
-- lib/pvdp); p points at uint16_t (bf16) elements, pairs at even offsets.
M.dp = {
  ivec = "__m512i",
  -- acc + the pairwise products of a and b (all __m512 / __m512i)
  dot = function(acc, a, b)
    return ("_mm512_dpbf16_ps(%s, (__m512bh)%s, (__m512bh)%s)"):format(acc, a, b)
  end,
  -- 16 pairs (32 bf16 values)
  load = function(p) return ("_mm512_loadu_si512((const void *)(%s))"):format(p) end,
  -- the pair at p in every lane
  bcast = function(p) return ("attn_bcast_pair__avx512bf16(%s)"):format(p) end,
  -- 16 f32 lanes rounded to bf16 (nearest even), stored at p
  store_bf16 = function(p, v)
    return ("_mm256_storeu_si256((__m256i *)(%s), (__m256i)_mm512_cvtneps_pbh(%s))"):format(p, v)
  end,
  -- a statement: the 16 pairs (a[d], b[d]) of two rows of bf16 values stored at p
  store_pairs = function(p, a, b)
    local function ld(x) return ("_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(%s)))"):format(x) end
    return ("_mm512_storeu_si512((void *)(%s), _mm512_or_si512(%s, _mm512_slli_epi32(%s, 16)))"):format(p, ld(a), ld(b))
  end,
  -- the 16 pairs (a[i], b[i]) of two vectors of f32 lanes, each rounded to
  -- bf16 (nearest even), as 32-bit lanes (the decode path's P in pairs of keys)
  pairs_of = function(a, b)
    local function w(x) return ("_mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(%s))"):format(x) end
    return ("_mm512_or_si512(%s, _mm512_slli_epi32(%s, 16))"):format(w(a), w(b))
  end,
  -- 16 32-bit lanes stored at p
  store = function(p, x) return ("_mm512_storeu_si512((void *)(%s), %s)"):format(p, x) end,
}

--- C text of the pair helpers (attr: what precedes a function).
function M.dp_helpers(attr)
  return (([[

/* The bf16 pair at p (two uint16_t) in every 32-bit lane. */
ATTR static inline __m512i attn_bcast_pair__avx512bf16(const uint16_t *p)
{
    int32_t x;
    memcpy(&x, p, sizeof x);
    return _mm512_set1_epi32(x);
}]]):gsub("ATTR ", attr))
end

return M
