--- Integer block dots for matmul = "int8" (q8_0 and q4_0 K/V caches): the C
-- of the helpers that score 1 to 4 packed query rows against one K row of
-- llama.cpp's blocks, for an ISA module that states `int8` (a table):
--   style       "x86" (256-bit integer vectors: AVX2, and AVX-512 CPUs), "neon"
--               or "scalar"
--   dp_target   the target of the dot-product extension's helpers (x86:
--               AVX512-VNNI's vpdpbusd on 256-bit vectors, or AVX-VNNI's;
--               NEON: dotprod's sdot), or nil where there is none
--   dp_bit      its bit in attn_cpu()->int8_dot (attn_runtime.h)
--   dp_dot      (x86) the vpdpbusd intrinsic: acc + u8 x s8 products, 4 a lane
--
-- A packed query row (qpacki, lib/pack) holds, for nb = D / 32 blocks, in
-- the floats of the row: the q8_0 codes (bytes 0 .. 32 nb), then at float
-- 8 nb the blocks' scales times the score scale (f32), at float 9 nb the
-- blocks' code sums (int32; the q4_0 correction below), and at float 10 nb
-- whether the CPU has the extension (int32, the dispatch of the helpers).
--
-- A block's score is d_q d_k sum_i q_i k_i, the integer sum exact in int32
-- (ggml's vec_dot_q8_0_q8_0 and vec_dot_q4_0_q8_0).  x86 multiplies unsigned
-- by signed bytes: q8_0 K by the sign trick, |k| times q with k's sign (no
-- code is -128: q8_0 codes are in -127..127, so 2 products fit the int16 of
-- vpmaddubsw); q4_0 K as its nibbles u = k + 8 in 0..15, the sum less 8
-- times the row's code sum.  NEON multiplies signed bytes (sdot, or vmull
-- pairs widened into int16 lanes without it).
local M = {}

local function n() return require("naming") end

--- The row pointers, scales and accumulators of R rows (C lines).
local function rows_head(R, acc_t, zero)
  local t = {}
  for r = 0, R - 1 do
    local row = r == 0 and "q" or ("q + %d * qs"):format(r)
    t[#t + 1] = ("    const int8_t *c%d = (const int8_t *)(const void *)(%s);"):format(r, row)
    t[#t + 1] = ("    const float *f%d = %s + 8 * nb;"):format(r, row)
    t[#t + 1] = ("    %s a%d = %s;"):format(acc_t, r, zero)
  end
  return table.concat(t, "\n")
end

--- The code sum of row r's block b (the q4_0 correction), a C statement declaring n<r>.
local function code_sum(r)
  local row = r == 0 and "q" or ("q + %d * qs"):format(r)
  return ("int32_t n%d;\n            memcpy(&n%d, %s + 9 * nb + b, sizeof n%d);"):format(r, r, row, r)
end

--- The signature's head and comment.
local function head(name, kv, R, attr)
  return ([[

/* s[0..%d) = the base-2 scores of %d packed q8_0 quer%s (qpacki, qs floats apart)
 * against the K row k of nb %s blocks: per block d_q d_k (times the score scale)
 * times the integer dot of the codes. */
%sstatic inline void %s(const float *q, int64_t qs, const attn_block_%s *k, int nb, float *s)
{]]):format(R, R, R > 1 and "y rows" or "y row", kv, attr, name, kv)
end

--- x86: a row's 8 int32 sums t of block b (the dot: "mad" vpmaddubsw, or the
-- extension's vpdpbusd).
local function x86_body(I, R, kv, mode, name, attr)
  local L = { head(name, kv, R, attr) }
  local function add(s) L[#L + 1] = s end
  if mode == "mad" then add("    const __m256i ones = _mm256_set1_epi16(1);") end
  if kv == "q4_0" then add("    const __m128i low = _mm_set1_epi8(15);") end
  add(rows_head(R, "__m256", "_mm256_setzero_ps()"))
  add("    int b;")
  if R == 1 then add("    (void)qs;") end
  if mode == "mad" and I.dp_target then
    add("    {\n        int32_t dp;\n        memcpy(&dp, q + 10 * nb, sizeof dp);")
    add(("        if (dp) { /* the extension (attn_cpu()->int8_dot) */\n            %s(q, qs, k, nb, s);\n"
      .. "            return;\n        }\n    }"):format(name .. "_dp"))
  end
  add("    for (b = 0; b < nb; b++) {")
  add(("        const float dk = %s(k[b].d);"):format(n().shared("widen_f16", "scalar")))
  if kv == "q8_0" then
    add("        const __m256i kx = _mm256_loadu_si256((const __m256i *)(const void *)k[b].q);")
    add("        const __m256i ka = _mm256_sign_epi8(kx, kx); /* |k| */")
  else
    add("        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)k[b].q);")
    add("        const __m256i ka = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(x, low)),")
    add("            _mm_and_si128(_mm_srli_epi16(x, 4), low), 1); /* values 0..15 low nibbles, 16..31 high: k + 8 */")
  end
  for r = 0, R - 1 do
    add("        {")
    add(("            const __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)(c%d + 32 * b));"):format(r))
    local qop = kv == "q8_0" and "_mm256_sign_epi8(qv, kx)" or "qv"
    local dot
    if kv == "q4_0" then
      add("            " .. code_sum(r))
      local init = ("_mm256_setr_epi32(-8 * n%d, 0, 0, 0, 0, 0, 0, 0)"):format(r)
      dot = mode == "mad" and ("_mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ka, qv), ones), %s)"):format(init)
        or ("%s(%s, ka, qv)"):format(I.dp_dot, init)
    else
      dot = mode == "mad" and ("_mm256_madd_epi16(_mm256_maddubs_epi16(ka, %s), ones)"):format(qop)
        or ("%s(_mm256_setzero_si256(), ka, %s)"):format(I.dp_dot, qop)
    end
    add(("            const __m256i t = %s;"):format(dot))
    add(("            a%d = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(f%d[b] * dk), a%d);"):format(r, r, r))
    add("        }")
  end
  add("    }")
  for r = 0, R - 1 do add(("    s[%d] = %s(a%d);"):format(r, I.hadd8, r)) end
  add("}")
  return table.concat(L, "\n")
end

--- NEON: sdot (mode "dp") or vmull pairs ("mad").
local function neon_body(I, R, kv, mode, name, attr)
  local L = { head(name, kv, R, attr) }
  local function add(s) L[#L + 1] = s end
  add(rows_head(R, "float32x4_t", "vdupq_n_f32(0.0f)"))
  add("    int b;")
  if R == 1 then add("    (void)qs;") end
  if mode == "mad" and I.dp_target then
    add("    {\n        int32_t dp;\n        memcpy(&dp, q + 10 * nb, sizeof dp);")
    add(("        if (dp) { /* the extension (attn_cpu()->int8_dot) */\n            %s(q, qs, k, nb, s);\n"
      .. "            return;\n        }\n    }"):format(name .. "_dp"))
  end
  add("    for (b = 0; b < nb; b++) {")
  add(("        const float dk = %s(k[b].d);"):format(n().shared("widen_f16", "scalar")))
  if kv == "q8_0" then
    add("        const int8x16_t k0 = vld1q_s8(k[b].q), k1 = vld1q_s8(k[b].q + 16);")
  else
    add("        const uint8x16_t x = vld1q_u8(k[b].q);")
    add("        const int8x16_t k0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(15))), vdupq_n_s8(8));")
    add("        const int8x16_t k1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x, 4)), vdupq_n_s8(8));")
  end
  for r = 0, R - 1 do
    add("        {")
    add(("            const int8x16_t q0 = vld1q_s8(c%d + 32 * b), q1 = vld1q_s8(c%d + 32 * b + 16);"):format(r, r))
    if mode == "dp" then
      add("            const int32x4_t t = vdotq_s32(vdotq_s32(vdupq_n_s32(0), k0, q0), k1, q1);")
    else
      add("            const int16x8_t p0 = vmlal_high_s8(vmull_s8(vget_low_s8(k0), vget_low_s8(q0)), k0, q0);")
      add("            const int16x8_t p1 = vmlal_high_s8(vmull_s8(vget_low_s8(k1), vget_low_s8(q1)), k1, q1);")
      add("            const int32x4_t t = vpadalq_s16(vpaddlq_s16(p0), p1);")
    end
    add(("            a%d = vfmaq_f32(a%d, vcvtq_f32_s32(t), vdupq_n_f32(f%d[b] * dk));"):format(r, r, r))
    add("        }")
  end
  add("    }")
  for r = 0, R - 1 do add(("    s[%d] = vaddvq_f32(a%d);"):format(r, r)) end
  add("}")
  return table.concat(L, "\n")
end

--- Scalar: plain integer loops.
local function scalar_body(R, kv, name, attr)
  local L = { head(name, kv, R, attr) }
  local function add(s) L[#L + 1] = s end
  add(rows_head(R, "float", "0.0f"))
  add("    int b, i;")
  if R == 1 then add("    (void)qs;") end
  add("    for (b = 0; b < nb; b++) {")
  add(("        const float dk = %s(k[b].d);"):format(n().shared("widen_f16", "scalar")))
  local ts = {}
  for r = 0, R - 1 do ts[#ts + 1] = ("t%d = 0"):format(r) end
  add(("        int32_t %s;"):format(table.concat(ts, ", ")))
  add("        for (i = 0; i < 32; i++) {")
  if kv == "q8_0" then
    add("            const int32_t x = k[b].q[i];")
  else
    add("            const int32_t x = (i < 16 ? (k[b].q[i] & 15) : (k[b].q[i - 16] >> 4)) - 8;")
  end
  for r = 0, R - 1 do add(("            t%d += x * c%d[32 * b + i];"):format(r, r)) end
  add("        }")
  for r = 0, R - 1 do add(("        a%d += (float)t%d * (f%d[b] * dk);"):format(r, r, r)) end
  add("    }")
  for r = 0, R - 1 do add(("    s[%d] = a%d;"):format(r, r)) end
  add("}")
  return table.concat(L, "\n")
end

--- The name of the helper scoring R rows against a row of kv blocks.
function M.name(isa, R, kv) return n().shared(("idot%d_%s"):format(R, kv), isa.name) end

--- C text of the helpers of a variant (attr: what precedes its functions)
-- for K blocks of type kv: the extension's forms first, under their target.
function M.helpers(isa, kv, attr)
  local I = isa.int8
  if not I then error(("ISA module '%s' spells no integer block dots (int8)"):format(isa.name), 2) end
  local out = {}
  if I.style == "x86" then
    I.hadd8 = n().shared("hadd8", isa.name)
    out[#out + 1] = ([[

/* The sum of the 8 floats of v. */
%sstatic inline float %s(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}]]):format(attr, I.hadd8)
  end
  local dp_attr = I.dp_target and ("ATTN_MAYBE_UNUSED __attribute__((target(\"%s\"))) "):format(I.dp_target)
  for R = 1, 4 do
    local name = M.name(isa, R, kv)
    if I.style == "x86" then
      if I.dp_target then out[#out + 1] = x86_body(I, R, kv, "dp", name .. "_dp", dp_attr) end
      out[#out + 1] = x86_body(I, R, kv, "mad", name, attr)
    elseif I.style == "neon" then
      if I.dp_target then out[#out + 1] = neon_body(I, R, kv, "dp", name .. "_dp", dp_attr) end
      out[#out + 1] = neon_body(I, R, kv, "mad", name, attr)
    else
      out[#out + 1] = scalar_body(R, kv, name, attr)
    end
  end
  return table.concat(out, "\n")
end

return M
