--- AArch64 NEON spelling of the ISA interface (see isa/init.lua for the contract).
local M = {
  name = "neon",
  enum = "ATTN_ISA_NEON",
  lanes = 4,
  regs = 32,
  -- micro-kernel blocking: scores MR x NR vectors, P*V MR x NVC vectors;
  -- the AVX-512 choice (the same 32 registers); not measured on hardware yet
  qk_block = { mr = 8, nr = 2 },
  pv_block = { mr = 6, nvc = 4 },
  -- the classic families' loops (planner/classic.lua): AVX-512's, for the same 32 registers
  classic_block = { mr = 4, nb = 4, ks = 4, ch = 8 },
  -- keys the streaming decode kernel takes a step, by K/V storage type
  -- (planner/sdpa.lua, STREAM_KEYS_BY_CPU; unmeasured: the x86 choice for 16-bit caches)
  stream_keys = { bf16 = 2, f16 = 2 },
  vec = "float32x4_t",
  -- matmul = "int8" (isa/int8.lua): integer block dots, vmull pairs, or
  -- sdot where the CPU has the dotprod extension
  int8 = { style = "neon", dp_target = "", dp_bit = "ATTN_INT8_DOT_DOTPROD", rows = 8 },
  arch_guard = "defined(__aarch64__)",
  include = "arm_neon.h",
  target = nil, -- NEON is part of the AArch64 baseline
}

function M.zero() return "vdupq_n_f32(0.0f)" end
function M.set1(x) return ("vdupq_n_f32(%s)"):format(x) end
function M.load(p) return ("vld1q_f32(%s)"):format(p) end
function M.store(p, v) return ("vst1q_f32(%s, %s)"):format(p, v) end
-- Partial vectors go lane by lane so nothing past the row is touched.
function M.loadn(p, n) return ("attn_loadn__neon(%s, %d)"):format(p, n) end
function M.storen(p, v, n) return ("attn_storen__neon(%s, %s, %d)"):format(p, v, n) end
function M.add(a, b) return ("vaddq_f32(%s, %s)"):format(a, b) end
function M.sub(a, b) return ("vsubq_f32(%s, %s)"):format(a, b) end
function M.mul(a, b) return ("vmulq_f32(%s, %s)"):format(a, b) end
function M.div(a, b) return ("vdivq_f32(%s, %s)"):format(a, b) end
function M.fma(a, b, c) return ("vfmaq_f32(%s, %s, %s)"):format(c, a, b) end
-- vmaxq/vminq propagate NaN from either side.
function M.max(a, b) return ("vmaxq_f32(%s, %s)"):format(a, b) end
function M.min(a, b) return ("vminq_f32(%s, %s)"):format(a, b) end
function M.select_lt(a, b, x, y) return ("vbslq_f32(vcltq_f32(%s, %s), %s, %s)"):format(a, b, x, y) end
function M.round(v) return ("vrndnq_f32(%s)"):format(v) end
function M.pow2i(v)
  return ("vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(%s), vdupq_n_s32(127)), 23))"):format(v)
end
function M.iota() return "attn_iota__neon()" end
function M.reduce_add(v) return ("vaddvq_f32(%s)"):format(v) end
function M.reduce_max(v) return ("vmaxvq_f32(%s)"):format(v) end
-- out[0..3] = the sums of a, b, c, d (a statement)
function M.hsum4(a, b, c, d, out)
  return ("vst1q_f32(%s, vpaddq_f32(vpaddq_f32(%s, %s), vpaddq_f32(%s, %s)))"):format(out, a, b, c, d)
end
-- Rows along pairs of lanes (isa/init.lua, "set2"): two rows, two values of D each.
function M.set2(p) return ("vcombine_f32(vld1_f32(%s), vld1_f32(%s))"):format(p, p) end
function M.sum_pairs(x, y, s0, s1) return ("attn_sum_pairs__neon(%s, %s, %s, %s)"):format(x, y, s0, s1) end
--- Four floats in registers (isa/init.lua, "q4"): a NEON vector is one.
M.q4 = {
  vec = "float32x4_t",
  zero = M.zero, set1 = M.set1, load = M.load, store = M.store,
  set4 = function(a, b, c, d) return ("attn_set4__neon(%s, %s, %s, %s)"):format(a, b, c, d) end,
  add = M.add, sub = M.sub, mul = M.mul, div = M.div, fma = M.fma, max = M.max, min = M.min,
  select_lt = M.select_lt, round = M.round, pow2i = M.pow2i,
  any_gt = function(a, b) return ("(vmaxvq_u32(vcgtq_f32(%s, %s)) != 0)"):format(a, b) end,
  hsum4 = function(a, b, c, d) return ("vpaddq_f32(vpaddq_f32(%s, %s), vpaddq_f32(%s, %s))"):format(a, b, c, d) end,
  spread = function(v) return v end,
  lane = function(s, r) return ("vdupq_laneq_f32(%s, %d)"):format(s, r) end,
}

-- Storage types (isa/init.lua, "Storage types"): 4 lanes of bf16 or f16
-- are one 64-bit load.  bf16 widens by a shift (vshll); f16 by fcvtl
-- (AArch64 base ISA).  Narrowing: f16 by fcvtn (round to nearest even, NaN
-- quiet, overflow to inf), bf16 in integer ops (attn_narrow_bf16__neon).
local tails16 = require("isa.tails16")
--- a block's f16 scale (a uint16_t bit pattern) as f32 in every lane
function M.block_scale(x) return ("vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(%s)))"):format(x) end

local SPELL = {
  bf16 = {
    load = function(p) return ("vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(%s), 16))"):format(p) end,
    store = function(p, v) return ("vst1_u16(%s, attn_narrow_bf16__neon(%s))"):format(p, v) end,
  },
  f16 = {
    load = function(p) return ("vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(%s)))"):format(p) end,
    store = function(p, v) return ("vst1_u16(%s, vreinterpret_u16_f16(vcvt_f16_f32(%s)))"):format(p, v) end,
  },
}
M.storage = tails16.storage("neon", M.set1, SPELL)

local function storage_helpers(dtypes)
  local out = {}
  if dtypes.bf16 then
    out[#out + 1] = [[

/* f32 lanes to bf16, rounded to nearest even; a NaN stays a quiet NaN. */
ATTR static inline uint16x4_t attn_narrow_bf16__neon(float32x4_t v)
{
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    const uint32x4_t r = vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7FFF)), lsb);
    const uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
    return vshrn_n_u32(vbslq_u32(nan, vorrq_u32(x, vdupq_n_u32(0x400000)), r), 16);
}]]
  end
  for _, dt in ipairs({ "bf16", "f16" }) do
    if dtypes[dt] then
      out[#out + 1] = tails16.tails("neon", "float32x4_t", 4, dt, SPELL)
    end
  end
  return table.concat(out)
end

function M.helpers(attr, opts)
  local storage = opts and opts.storage and storage_helpers(opts.storage) or ""
  return (([[
ATTR static inline float32x4_t attn_loadn__neon(const float *p, int n)
{
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int i;
    for (i = 0; i < n; i++) t[i] = p[i];
    return vld1q_f32(t);
}
ATTR static inline void attn_storen__neon(float *p, float32x4_t v, int n)
{
    float t[4];
    int i;
    vst1q_f32(t, v);
    for (i = 0; i < n; i++) p[i] = t[i];
}
ATTR static inline float32x4_t attn_set4__neon(float a, float b, float c, float d)
{
    float32x4_t v = vdupq_n_f32(a);
    v = vsetq_lane_f32(b, v, 1);
    v = vsetq_lane_f32(c, v, 2);
    return vsetq_lane_f32(d, v, 3);
}
ATTR static inline float32x4_t attn_iota__neon(void)
{
    static const float iota[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    return vld1q_f32(iota);
}
]] .. (opts and opts.pairs and [[
/* x and y hold 2 rows' sums in lane pairs: the rows' totals of x go to
 * s0[0..1], of y to s1[0..1]. */
ATTR static inline void attn_sum_pairs__neon(float32x4_t x, float32x4_t y, float *s0, float *s1)
{
    const float32x4_t t = vpaddq_f32(x, y);
    vst1_f32(s0, vget_low_f32(t));
    vst1_f32(s1, vget_high_f32(t));
}
]] or "") .. storage):gsub("ATTR ", attr))
end

return M
