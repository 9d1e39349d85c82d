--- Integer block dots for matmul = "int8" (q8_0 and q4_0 K/V caches): the C
-- of the helpers that score 1 to 4 (and `rows`) packed query rows against one
-- or two K rows of llama.cpp's blocks, for an ISA module that states `int8` (a table):
--   style       "x86" (AVX2, and AVX-512 CPUs), "neon" or "scalar"
--   dp_target   the target of the dot-product extension's helpers (x86:
--               AVX512-VNNI's vpdpbusd on 512-bit vectors, two blocks a
--               vector, or AVX-VNNI's on 256-bit ones; NEON: "", dotprod's
--               sdot spelled as its encoding), or nil where there is none
--   dp_bit      its bit in attn_cpu()->int8_dot (attn_runtime.h)
--   dp_dot      (x86) the vpdpbusd intrinsic: acc + u8 x s8 products, 4 a lane
--   dp_width    (x86) its vectors' bits, 256 or 512
--   rows        the most query rows a helper scores in one call: 4, or 8 where
--               the ISA has 32 vector registers (the K side, its loads, offsets
--               and scales, is then done once for 8 rows)
--   keys16      (x86) true where the streaming decode's
--               block step scores its 16 keys along the lanes (keys_helpers)
--
-- A packed query row (qpacki, lib/pack) holds, for nb = D / 32 blocks, in
-- the floats of the row: the q8_0 codes (bytes 0 .. 32 nb); at float 8 nb,
-- one int32 per 4 codes, minus the K codes' offset (128 for q8_0, 8 for
-- q4_0) times the 4 codes' sum (the start of vpdpbusd's sums, below); at
-- float 16 nb each block's scale times the score scale, in 8 floats; at
-- float 24 nb whether the CPU has the extension (int32: the helpers'
-- dispatch, read once a call); at float 24 nb + 1 + b block b's corrections
-- summed (int32: where the keys-in-lanes helper's sums of the block start).
--
-- A block's score is d_q d_k sum_i q_i k_i, the integer sum exact in int32
-- (ggml's vec_dot_q8_0_q8_0 and vec_dot_q4_0_q8_0).  vpdpbusd multiplies
-- unsigned by signed bytes: K's codes offset to unsigned (q8_0: k + 128, a
-- xor; q4_0: its nibbles, k + 8), the sums starting from the row's
-- correction, so one instruction a row and vector.  vpmaddubsw (the form
-- without the extension) takes the sign trick instead: |k| times q with k's
-- sign (q8_0 codes are in -127..127, so two products fit its int16 lanes);
-- q4_0's nibbles are unsigned already, multiplied as they are and the sums
-- started from the row's correction as vpdpbusd's are (15 x 127 x 2 fits).
-- A q4_0 block's 16 bytes are unpacked by one broadcast of them to both
-- halves of a vector, one shift by 0 and 4 bits, and one and with 15.
-- NEON multiplies signed bytes (sdot, or vmull pairs widened into int16).
local M = {}

local function n() return require("naming") end

--- The signature's head and comment (NK keys: k0 into s0, k1 into s1).
local function head(name, kv, R, NK, attr)
  local keys = NK == 2 and (", const attn_block_%s *k1"):format(kv) or ""
  return ([[

/* s%s[0..%d) = the base-2 scores of %d packed q8_0 quer%s (qpacki, qs floats apart)
 * against the K row%s of nb %s blocks (0 past %d): per block d_q d_k (times the
 * score scale) times the integer dot of the codes. */
%sstatic inline void %s(const float *q, int64_t qs, const attn_block_%s *k0%s, int nb, float *s0%s)
{]]):format(NK == 2 and ", s1" or "0", math.max(4, R), R, R > 1 and "y rows" or "y row",
    NK == 2 and "s k0, k1" or " k0", kv, R,
    attr, name, kv, keys, NK == 2 and ", float *s1" or "")
end

--- The row pointers, scales and accumulators of R rows and NK keys (C lines):
-- c<r> the codes, f<r> the block scales (8 floats a block).
local function rows_head(R, NK, acc_t, zero)
  local t = {}
  for r = 0, R - 1 do
    local row = r == 0 and "q" or ("q + %d * qs"):format(r)
    t[#t + 1] = ("    const int8_t *c%d = (const int8_t *)(const void *)(%s);"):format(r, row)
    t[#t + 1] = ("    const float *f%d = %s + 16 * nb;"):format(r, row)
  end
  for kk = 0, NK - 1 do
    for r = 0, R - 1 do t[#t + 1] = ("    %s a%d_%d = %s;"):format(acc_t, kk, r, zero) end
  end
  return table.concat(t, "\n")
end

--- The dispatch to the extension's form (C lines), where the ISA has one.
local function dispatch(I, mode, name, NK)
  if mode ~= "mad" or not I.dp_target then return nil end
  return ("    {\n        int32_t dp;\n        memcpy(&dp, q + 24 * nb, sizeof dp);\n"
    .. "        if (dp) { /* the extension (attn_cpu()->int8_dot) */\n            %s(q, qs, %s, nb, %s);\n"
    .. "            return;\n        }\n    }"):format(name .. "_dp", NK == 2 and "k0, k1" or "k0",
      NK == 2 and "s0, s1" or "s0")
end

--- The stores of the sums (scalar expressions sum(kk, r)), 0 past R.
local function stores(R, NK, sum)
  local t = {}
  for kk = 0, NK - 1 do
    for r = 0, math.max(4, R) - 1 do t[#t + 1] = ("    s%d[%d] = %s;"):format(kk, r, r < R and sum(kk, r) or "0.0f") end
  end
  return table.concat(t, "\n")
end

--- x86: the vpdpbusd intrinsic on W-bit vectors (512: AVX512-VNNI's; 256:
-- the ISA's own, I.dp_dot, or AVX512-VL's where its dots are 512 bits wide):
-- acc + u8 x s8 products, 4 a lane (the kernels' spelling, and the bench's
-- int8 peak probe's: generator/probes.lua)
function M.dp_intrinsic(I, W)
  if W == 512 then return "_mm512_dpbusd_epi32" end
  return I.dp_width == 512 and "_mm256_dpbusd_epi32" or I.dp_dot
end

--- x86, 256 bits: acc + the u8 x s8 products of u and s in pairs, the form
-- without the extension (vpmaddubsw, vpmaddwd by `ones`, a C name of a
-- vector of 16-bit ones, and vpaddd)
function M.mad(u, s, acc)
  return ("_mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(%s, %s), ones), %s)"):format(u, s, acc)
end

--- x86: one block's K codes (the block blk, a C lvalue), as vpdpbusd (u8)
-- or the sign trick takes them (256 bits); q4_0's nibbles unsigned: the 16
-- bytes in both halves, shifted by 0 and 4 bits (shift), and 15 (low)
local function x86_kcodes(kv, blk)
  if kv == "q8_0" then
    return ("_mm256_loadu_si256((const __m256i *)(const void *)%s.q)"):format(blk)
  end
  return ("_mm256_and_si256(_mm256_srlv_epi64(_mm256_broadcastsi128_si256(_mm_loadu_si128("
    .. "(const __m128i *)(const void *)%s.q)), shift), low)"):format(blk)
end

--- x86, q4_0: two blocks' (lo, hi) nibbles in 512 bits, the 16 bytes of
-- each in two 128-bit lanes (shift2, low2)
local function x86_kcodes2(lo, hi)
  local function bc(blk) return ("(const __m128i *)(const void *)%s.q"):format(blk) end
  return ("_mm512_and_si512(_mm512_srlv_epi64(_mm512_inserti64x4(_mm512_broadcast_i32x4(_mm_loadu_si128(%s)), "
    .. "_mm256_broadcastsi128_si256(_mm_loadu_si128(%s)), 1), shift2), low2)"):format(bc(lo), bc(hi))
end

--- x86: R rows against NK keys (k0, k1), vectors of W bits (512: two
-- blocks a vector, the odd last block in 256 bits); mode "dp" (vpdpbusd from
-- the rows' corrections) or "mad" (vpmaddubsw, the sign trick).  The sums go
-- through the ISA's hsum4 where its vectors are the accumulators' (hsum4
-- true), else hadd8.
local function x86_body(I, isa, R, NK, kv, mode, name, attr)
  local W = mode == "dp" and I.dp_width or 256
  local L = { head(name, kv, R, NK, attr) }
  local function add(s) L[#L + 1] = s end
  local vf = "__m256"
  if kv == "q4_0" then -- the nibbles: low ones in a vector's low 128 bits, high ones in its high 128
    add("    const __m256i low = _mm256_set1_epi8(15), shift = _mm256_set_epi64x(4, 4, 0, 0);")
    if W == 512 then
      add("    const __m512i low2 = _mm512_set1_epi8(15), shift2 = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);")
    end
  end
  if mode == "mad" then add("    const __m256i ones = _mm256_set1_epi16(1);") end
  if mode == "dp" and kv == "q8_0" then add("    const __m256i flip = _mm256_set1_epi8((char)0x80);") end
  for r = 0, R - 1 do
    local row = r == 0 and "q" or ("q + %d * qs"):format(r)
    add(("    const int8_t *c%d = (const int8_t *)(const void *)(%s);"):format(r, row))
    add(("    const float *f%d = %s + 16 * nb, *n%d = %s + 8 * nb;"):format(r, row, r, row))
  end
  local zero = W == 512 and "_mm512_setzero_ps()" or "_mm256_setzero_ps()"
  for kk = 0, NK - 1 do
    for r = 0, R - 1 do add(("    %s a%d_%d = %s;"):format(W == 512 and "__m512" or vf, kk, r, zero)) end
  end
  add("    int b = 0;")
  if R == 1 then add("    (void)qs;") end
  for r = 0, R - 1 do add(("    (void)n%d;"):format(r)) end
  local d = dispatch(I, mode, name, NK)
  if d then add(d) end
  local function kcodes(kk, bi) return x86_kcodes(kv, ("k%d[%s]"):format(kk, bi)) end
  local function kcodes2(kk) return x86_kcodes2(("k%d[b]"):format(kk), ("k%d[b + 1]"):format(kk)) end
  -- the body of one step of `blocks` blocks (1 or 2) in vectors of w bits
  local function step(w, ind)
    local two = w == 512
    for kk = 0, NK - 1 do
      if two then
        add(("%sconst __m512 d%d = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256("
          .. "_mm_set1_epi16((short)k%d[b].d)), _mm_set1_epi16((short)k%d[b + 1].d), 1)); /* d_k, 8 lanes a block */")
          :format(ind, kk, kk, kk))
        local x = kv == "q4_0" and kcodes2(kk)
          or ("_mm512_inserti64x4(_mm512_castsi256_si512(%s), %s, 1)"):format(kcodes(kk, "b"), kcodes(kk, "b + 1"))
        if kv == "q8_0" then
          x = ("_mm512_xor_si512(%s, _mm512_broadcast_i64x4(flip))"):format(x)
        end
        add(("%sconst __m512i x%d = %s;"):format(ind, kk, x))
      else
        add(("%sconst __m256 d%d = %s;"):format(ind, kk, isa.lanes == 8
          and ("_mm256_cvtph_ps(_mm_set1_epi16((short)k%d[b].d))"):format(kk) -- F16C (AVX2 variants)
          or ("_mm512_castps512_ps256(_mm512_cvtph_ps(_mm256_set1_epi16((short)k%d[b].d)))"):format(kk)))
        local x = kcodes(kk, "b")
        if mode == "dp" then
          if kv == "q8_0" then x = ("_mm256_xor_si256(%s, flip)"):format(x) end
          add(("%sconst __m256i x%d = %s;"):format(ind, kk, x))
        elseif kv == "q4_0" then -- unsigned nibbles, multiplied as they are (the offset is in the correction)
          add(("%sconst __m256i x%d = %s;"):format(ind, kk, x))
        else
          add(("%sconst __m256i x%d = %s, u%d = _mm256_sign_epi8(x%d, x%d); /* k, |k| */")
            :format(ind, kk, x, kk, kk, kk))
        end
      end
    end
    for r = 0, R - 1 do
      add(ind .. "{")
      local i2 = ind .. "    "
      if two then
        add(("%sconst __m512i qv = _mm512_loadu_si512((const void *)(c%d + 32 * b));"):format(i2, r))
        add(("%sconst __m512i nv = _mm512_loadu_si512((const void *)(n%d + 8 * b));"):format(i2, r))
        add(("%sconst __m512 fv = _mm512_loadu_ps(f%d + 8 * b);"):format(i2, r))
      else
        add(("%sconst __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)(c%d + 32 * b));"):format(i2, r))
        if mode == "dp" or kv == "q4_0" then
          add(("%sconst __m256i nv = _mm256_loadu_si256((const __m256i *)(const void *)(n%d + 8 * b));"):format(i2, r))
        end
        add(("%sconst __m256 fv = _mm256_loadu_ps(f%d + 8 * b);"):format(i2, r))
      end
      for kk = 0, NK - 1 do
        local t
        if two then
          t = ("%s(nv, x%d, qv)"):format(M.dp_intrinsic(I, 512), kk)
        elseif mode == "dp" then
          t = ("%s(nv, x%d, qv)"):format(M.dp_intrinsic(I, 256), kk)
        elseif kv == "q4_0" then
          t = M.mad(("x%d"):format(kk), "qv", "nv")
        else
          t = ("_mm256_madd_epi16(_mm256_maddubs_epi16(u%d, _mm256_sign_epi8(qv, x%d)), ones)"):format(kk, kk)
        end
        local acc = ("a%d_%d"):format(kk, r)
        if two then
          add(("%s%s = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(%s), fv), d%d, %s);")
            :format(i2, acc, t, kk, acc))
        elseif W == 512 then -- the odd last block of a 512-bit loop, into the low half
          add(("%s%s = _mm512_add_ps(%s, _mm512_zextps256_ps512(_mm256_mul_ps(_mm256_mul_ps("
            .. "_mm256_cvtepi32_ps(%s), fv), d%d)));")
            :format(i2, acc, acc, t, kk))
        else
          add(("%s%s = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(%s), fv), d%d, %s);")
            :format(i2, acc, t, kk, acc))
        end
      end
      add(ind .. "}")
    end
  end
  if W == 512 then
    add("    for (; b + 1 < nb; b += 2) {")
    step(512, "        ")
    add("    }")
    add("    if (b < nb) { /* an odd last block */")
    step(256, "        ")
    add("    }")
  else
    add("    for (; b < nb; b++) {")
    step(256, "        ")
    add("    }")
  end
  for kk = 0, NK - 1 do
    local out = "s" .. kk
    if W == 512 or isa.lanes == 8 then
      local none = W == 512 and "_mm512_setzero_ps()" or "_mm256_setzero_ps()"
      for g = 0, math.max(4, R) - 1, 4 do -- 4 rows a sum
        local a = {}
        for r = g, g + 3 do a[#a + 1] = r < R and ("a%d_%d"):format(kk, r) or none end
        add(("    %s;"):format(isa.hsum4(a[1], a[2], a[3], a[4], g == 0 and out or ("%s + %d"):format(out, g))))
      end
    else
      for r = 0, math.max(4, R) - 1 do
        add(("    %s[%d] = %s;"):format(out, r, r < R and ("%s(a%d_%d)"):format(I.hadd8, kk, r) or "0.0f"))
      end
    end
  end
  add("}")
  return table.concat(L, "\n")
end

--- NEON: sdot (mode "dp") or vmull pairs ("mad").
local function neon_body(I, R, NK, kv, mode, name, attr)
  local L = { head(name, kv, R, NK, attr) }
  local function add(s) L[#L + 1] = s end
  add(rows_head(R, NK, "float32x4_t", "vdupq_n_f32(0.0f)"))
  add("    int b;")
  if R == 1 then add("    (void)qs;") end
  local d = dispatch(I, mode, name, NK)
  if d then add(d) end
  add("    for (b = 0; b < nb; b++) {")
  for kk = 0, NK - 1 do
    -- (dk - dk below: 0, or NaN for a block whose scale is not finite, as its dequantized values are)
    add(("        const float dk%d = %s(k%d[b].d);"):format(kk, n().shared("widen_f16", "scalar"), kk))
    if kv == "q8_0" then
      add(("        const int8x16_t x%d = vld1q_s8(k%d[b].q), y%d = vld1q_s8(k%d[b].q + 16);"):format(kk, kk, kk, kk))
    else
      add(("        const uint8x16_t u%d = vld1q_u8(k%d[b].q);"):format(kk, kk))
      add(("        const int8x16_t x%d = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(u%d, vdupq_n_u8(15))), vdupq_n_s8(8));")
        :format(kk, kk))
      add(("        const int8x16_t y%d = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(u%d, 4)), vdupq_n_s8(8));")
        :format(kk, kk))
    end
  end
  for r = 0, R - 1 do
    add("        {")
    add(("            const int8x16_t q0 = vld1q_s8(c%d + 32 * b), q1 = vld1q_s8(c%d + 32 * b + 16);"):format(r, r))
    for kk = 0, NK - 1 do
      if mode == "dp" then
        add(("            const int32x4_t t%d = %s(%s(vdupq_n_s32(0), x%d, q0), y%d, q1);")
          :format(kk, I.sdot, I.sdot, kk, kk))
      else
        add(("            const int16x8_t p%d = vmlal_high_s8(vmull_s8(vget_low_s8(x%d), vget_low_s8(q0)), x%d, q0);")
          :format(kk, kk, kk))
        add(("            const int16x8_t r%d = vmlal_high_s8(vmull_s8(vget_low_s8(y%d), vget_low_s8(q1)), y%d, q1);")
          :format(kk, kk, kk))
        add(("            const int32x4_t t%d = vpadalq_s16(vpaddlq_s16(p%d), r%d);"):format(kk, kk, kk))
      end
      add(("            a%d_%d = vaddq_f32(vfmaq_f32(a%d_%d, vcvtq_f32_s32(t%d), vdupq_n_f32(f%d[8 * b] * dk%d)), "
        .. "vdupq_n_f32(dk%d - dk%d));"):format(kk, r, kk, r, kk, r, kk, kk, kk))
    end
    add("        }")
  end
  add("    }")
  add(stores(R, NK, function(kk, r) return ("vaddvq_f32(a%d_%d)"):format(kk, r) end))
  add("}")
  return table.concat(L, "\n")
end

--- Scalar: plain integer loops.
local function scalar_body(R, NK, kv, name, attr)
  local L = { head(name, kv, R, NK, attr) }
  local function add(s) L[#L + 1] = s end
  add(rows_head(R, NK, "float", "0.0f"))
  add("    int b, i;")
  if R == 1 then add("    (void)qs;") end
  add("    for (b = 0; b < nb; b++) {")
  local ts = {}
  for kk = 0, NK - 1 do
    for r = 0, R - 1 do ts[#ts + 1] = ("t%d_%d = 0"):format(kk, r) end
  end
  add(("        int32_t %s;"):format(table.concat(ts, ", ")))
  add("        for (i = 0; i < 32; i++) {")
  for kk = 0, NK - 1 do
    if kv == "q8_0" then
      add(("            const int32_t x%d = k%d[b].q[i];"):format(kk, kk))
    else
      add(("            const int32_t x%d = (i < 16 ? (k%d[b].q[i] & 15) : (k%d[b].q[i - 16] >> 4)) - 8;")
        :format(kk, kk, kk))
    end
    for r = 0, R - 1 do add(("            t%d_%d += x%d * c%d[32 * b + i];"):format(kk, r, kk, r)) end
  end
  add("        }")
  for kk = 0, NK - 1 do -- (dk - dk: 0, or NaN for a block whose scale is not finite, as its dequantized values are)
    add(("        const float dk%d = %s(k%d[b].d), nz%d = dk%d - dk%d;"):format(kk, n().shared("widen_f16", "scalar"),
      kk, kk, kk, kk))
    for r = 0, R - 1 do
      add(("        a%d_%d += (float)t%d_%d * (f%d[8 * b] * dk%d) + nz%d;"):format(kk, r, kk, r, r, kk, kk))
    end
  end
  add("    }")
  add(stores(R, NK, function(kk, r) return ("a%d_%d"):format(kk, r) end))
  add("}")
  return table.concat(L, "\n")
end

--- x86, 512-bit vectors (int8.keys16): R rows against the 16 keys of the
-- streaming decode's block step (k[0..16)), the keys along the lanes: per
-- block, the 16 keys' codes transposed (four keys' 16 bytes a vector, a
-- 4 x 4 transpose of 32-bit groups in each 128-bit lane) into 8 vectors,
-- vector i holding codes 4i .. 4i + 3 of every key; each row's block dot is
-- then 8 vpdpbusd into one accumulator, the row's 4 codes broadcast, from
-- the row's correction for the block (K's offset times its codes' sum): the
-- block's exact integer dots of the 16 keys in one vector, converted once
-- and scaled by d_q times the keys' d_k (dk, gathered by the caller): no
-- horizontal sum and no reduction a key.  The form for CPUs without the
-- extension scores the keys in pairs (idot<R>x2) and lays the scores out so.
local function keys_body(I, R, kv, name, attr)
  local W = I.dp_width
  local LN = W / 32 -- keys a vector: 16 (AVX-512), or 8 (AVX2: two sets of keys)
  local P, VI, VF = ("_mm%d_"):format(W), ("__m%di"):format(W), ("__m%d"):format(W)
  local SI = ("si%d"):format(W)
  local DP = M.dp_intrinsic(I, W)
  local L = {}
  local function add(s) L[#L + 1] = s end
  add(([[

/* s[16 r + c] = the base-2 scores of %d packed q8_0 quer%s (qpacki, qs floats apart) against
 * the 16 K rows k[c] of nb %s blocks (dk: their scales, block b's at 16 b): per block d_q d_k
 * (times the score scale) times the integer dot of the codes, a row's keys along the lanes. */
%sstatic inline void %s(const float *q, int64_t qs, const attn_block_%s *const *k, const uint16_t *dk, int nb,
        float *s)
{]]):format(R, R > 1 and "y rows" or "y row", kv, attr, name, kv))
  if kv == "q4_0" then
    add(("    const %s low = %sset1_epi8(15);"):format(VI, P))
  else
    add(("    const %s flip = %sset1_epi8((char)0x80);"):format(VI, P))
  end
  for r = 0, R - 1 do
    local row = r == 0 and "q" or ("q + %d * qs"):format(r)
    add(("    const int8_t *c%d = (const int8_t *)(const void *)(%s);"):format(r, row))
    add(("    const float *f%d = %s + 16 * nb, *n%d = %s + 8 * nb;"):format(r, row, r, row))
  end
  for r = 0, R - 1 do
    for g = 0, 16 / LN - 1 do add(("    %s a%d_%d = %ssetzero_ps();"):format(VF, r, g, P)) end
  end
  add("    int b;")
  if R == 1 then add("    (void)qs;") end
  add("    for (b = 0; b < nb; b++) {")
  for g = 0, 16 / LN - 1 do -- keys LN g .. LN g + LN - 1
    local base = LN * g
    add(("        /* keys %d .. %d */"):format(base, base + LN - 1))
    local h16 = W == 512 and "__m256i" or "__m128i" -- the keys' d_k, LN halves
    add(("        const %s d%d = %scvtph_ps(%s((const %s *)(const void *)(dk + 16 * b + %d)));")
      :format(VF, g, P, W == 512 and "_mm256_loadu_si256" or "_mm_loadu_si128", h16, base))
    -- z: keys base + j, base + 4 + j, ...'s 16 bytes from byte o, a 128-bit lane each
    local function gather4(j, o)
      local function ld(c)
        return ("_mm_loadu_si128((const __m128i *)(const void *)(k[%d][b].q + %d))"):format(base + c, o)
      end
      if W == 256 then
        return ("_mm256_inserti128_si256(_mm256_castsi128_si256(%s), %s, 1)"):format(ld(j), ld(4 + j))
      end
      local z = ("_mm512_castsi128_si512(%s)"):format(ld(j))
      for l = 1, 3 do z = ("_mm512_inserti32x4(%s, %s, %d)"):format(z, ld(4 * l + j), l) end
      return z
    end
    -- the 4 x 4 transpose of z0..z3 in each lane: y<i>, key 4 l + m's 32-bit group i in lane 4 l + m
    local function transpose(h)
      -- out<g><h>_<o0>, out<g><h>_<o1> = the low and high unpacks (bits) of in<g><h>_<a> and _<b>
      local function unpack(out, o0, o1, bits, src, a, b)
        local u, v = ("%s%d%d_%d"):format(src, g, h, a), ("%s%d%d_%d"):format(src, g, h, b)
        add(("        const %s %s%d%d_%d = %sunpacklo_epi%d(%s, %s), %s%d%d_%d = %sunpackhi_epi%d(%s, %s);")
          :format(VI, out, g, h, o0, P, bits, u, v, out, g, h, o1, P, bits, u, v))
      end
      unpack("t", 0, 1, 32, "z", 0, 1)
      unpack("t", 2, 3, 32, "z", 2, 3)
      unpack("y", 0, 1, 64, "t", 0, 2)
      unpack("y", 2, 3, 64, "t", 1, 3)
    end
    local x = {}
    if kv == "q8_0" then -- 32 codes: bytes 0..15 (groups 0..3), then 16..31 (4..7); offset to unsigned
      for h = 0, 1 do
        for j = 0, 3 do
          add(("        const %s z%d%d_%d = %sxor_%s(%s, flip);"):format(VI, g, h, j, P, SI, gather4(j, 16 * h)))
        end
        transpose(h)
        for i = 0, 3 do x[4 * h + i] = ("y%d%d_%d"):format(g, h, i) end
      end
    else -- 16 bytes: codes 0..15 in the low nibbles (groups 0..3), 16..31 in the high ones (4..7), unsigned
      for j = 0, 3 do add(("        const %s z%d0_%d = %s;"):format(VI, g, j, gather4(j, 0))) end
      transpose(0)
      for i = 0, 3 do
        add(("        const %s x%d_%d = %sand_%s(y%d0_%d, low), x%d_%d = %sand_%s(%ssrli_epi16(y%d0_%d, 4), low);")
          :format(VI, g, i, P, SI, g, i, g, 4 + i, P, SI, P, g, i))
        x[i], x[4 + i] = ("x%d_%d"):format(g, i), ("x%d_%d"):format(g, 4 + i)
      end
    end
    for r = 0, R - 1 do
      add("        {")
      -- from the block's correction (float 24 nb + 1 + b), the row's codes 4 a 32-bit broadcast
      add(("            %s acc = %sbroadcastd_epi32(_mm_loadu_si32(n%d + 16 * nb + 1 + b));"):format(VI, P, r))
      for i = 0, 7 do
        add(("            acc = %s(acc, %s, %sbroadcastd_epi32(_mm_loadu_si32(c%d + 32 * b + %d)));")
          :format(DP, x[i], P, r, 4 * i))
      end
      add(("            a%d_%d = %sfmadd_ps(%scvtepi32_ps(acc), %smul_ps(d%d, %sset1_ps(f%d[8 * b])), a%d_%d);")
        :format(r, g, P, P, P, g, P, r, r, g))
      add("        }")
    end
  end
  add("    }")
  for r = 0, R - 1 do
    for g = 0, 16 / LN - 1 do add(("    %sstoreu_ps(s + %d, a%d_%d);"):format(P, 16 * r + LN * g, r, g)) end
  end
  add("}")
  return table.concat(L, "\n")
end

--- The form for CPUs without the extension: key pairs (idot<R>x2, which
-- dispatches itself), their scores laid out a row's keys together.
local function keys_pairs(isa, R, kv, name, attr, dp_name)
  return ([[

/* s[16 r + c] as %s does, on CPUs with or without the dot-product extension. */
%sstatic inline void %s(const float *q, int64_t qs, const attn_block_%s *const *k, const uint16_t *dk, int nb,
        float *s)
{
    float t[64];
    int c, r;
    int32_t dp;
    memcpy(&dp, q + 24 * nb, sizeof dp);
    if (dp) { /* the extension (attn_cpu()->int8_dot) */
        %s(q, qs, k, dk, nb, s);
        return;
    }
    for (c = 0; c < 16; c += 2) %s(q, qs, k[c], k[c + 1], nb, t + 4 * c, t + 4 * c + 4);
    for (r = 0; r < %d; r++)
        for (c = 0; c < 16; c++) s[16 * r + c] = t[4 * c + r];
}]]):format(dp_name, attr, name, kv, dp_name, M.name(isa, R, kv, 2), R)
end

--- The name of the keys-in-lanes helper (int8.keys16) of R rows and K blocks of type kv.
function M.keys_name(isa, R, kv)
  return n().shared(("iqkeys%d_%s"):format(R, kv), isa.name)
end

--- C text of the keys-in-lanes helper of R rows (its extension's form first, under
-- its target, then the form every CPU of the ISA runs, which dispatches).
function M.keys_helpers(isa, R, kv, attr)
  local I, name = isa.int8, M.keys_name(isa, R, kv)
  local dp_attr = ("ATTN_MAYBE_UNUSED __attribute__((target(\"%s\"))) "):format(I.dp_target)
  return keys_body(I, R, kv, name .. "_dp", dp_attr) .. "\n" .. keys_pairs(isa, R, kv, name, attr, name .. "_dp")
end

--- The name of the helper scoring R rows against NK (1 or 2) rows of kv blocks.
function M.name(isa, R, kv, NK)
  return n().shared(("idot%d%s_%s"):format(R, NK == 2 and "x2" or "", kv), isa.name)
end

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
  if I.style == "neon" then
    -- sdot as its encoding on pinned registers: gcc's and clang's arm_neon.h
    -- offer vdotq_s32 only to a whole file built for dotprod, and clang's
    -- assembler takes no .arch directive for it in a function
    I.sdot = n().shared("sdot", isa.name)
    out[#out + 1] = ([[

/* acc + the dot products of a and b's signed bytes, 4 a lane (sdot; only on CPUs
 * with the dotprod extension: attn_cpu()->int8_dot). */
%sstatic inline int32x4_t %s(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    register int32x4_t r0 __asm__("v0") = acc;
    register int8x16_t r1 __asm__("v1") = a;
    register int8x16_t r2 __asm__("v2") = b;
    __asm__(".inst 0x4e829420 /* sdot v0.4s, v1.16b, v2.16b */" : "+w"(r0) : "w"(r1), "w"(r2));
    return r0;
}]]):format(attr, I.sdot)
  end
  local dp_attr = I.dp_target and (I.dp_target == "" and attr
    or ("ATTN_MAYBE_UNUSED __attribute__((target(\"%s\"))) "):format(I.dp_target))
  local rows = { 1, 2, 3, 4 }
  if (I.rows or 4) > 4 then rows[#rows + 1] = I.rows end
  for _, R in ipairs(rows) do
    for NK = 1, 2 do
      local name = M.name(isa, R, kv, NK)
      if I.style == "x86" then
        if I.dp_target then out[#out + 1] = x86_body(I, isa, R, NK, kv, "dp", name .. "_dp", dp_attr) end
        out[#out + 1] = x86_body(I, isa, R, NK, kv, "mad", name, attr)
      elseif I.style == "neon" then
        if I.dp_target then out[#out + 1] = neon_body(I, R, NK, kv, "dp", name .. "_dp", dp_attr) end
        out[#out + 1] = neon_body(I, R, NK, kv, "mad", name, attr)
      else
        out[#out + 1] = scalar_body(R, NK, kv, name, attr)
      end
    end
  end
  return table.concat(out, "\n")
end

return M
