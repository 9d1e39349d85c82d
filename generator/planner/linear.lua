--- The linear family's planner (linear attention with the feature map
-- phi(x) = elu(x) + 1): the tiles of the chunked algorithm, the
-- micro-kernels it calls (the scores and P*V kernels of the library), the
-- attn_spec of the descriptor.  Builds on planner (the parts every family
-- shares); docs/kernels.md explains the algorithm.
local common = require("planner")
local util = require("util")

local M = {}

--- Floats of ATTN_ALIGN (64) bytes: the parts of a thread's scratch start on one.
local ALIGN_FLOATS = 16

--- Heuristic tiles when the config says "auto" and no tuning result exists:
-- q is the chunk of the causal algorithm (query rows of a tile, and at most
-- as many keys in its diagonal block), kv the keys packed at a time when
-- they are folded into the state.  A causal chunk of T rows scores T x T
-- keys besides the state's 4 D Dv FLOPs a row (at D = Dv = 64 and T = 64,
-- half of the work), so causal configs take shorter chunks: on the AVX2
-- host (H 8, D 64, L 4096, alternated) chunks of 32 took 17.9-18.3 ms
-- against 20.8-22.0 for 64 and 17.0-18.4 for 16; 32 is also the AVX-512
-- scores kernel's panel of keys.  Without causal, q only tiles the rows,
-- and every key goes through the state in blocks of kv: longer blocks call
-- the P*V kernel over more keys for each load and store of its rows of S
-- (AMD Zen 4, AVX-512, H 8, D 64, L 4096, six rounds each: 6.56-6.85 ms
-- at 128, 6.29-6.65 at 256, 6.25-6.62 at 512, 6.65-6.70 at 1024).
M.DEFAULT_TILE = { q = 64, kv = 512 }
M.DEFAULT_TILE_CAUSAL = { q = 32, kv = 128 }

--- The heuristic tile of a normalized linear config.
function M.default_tile(cfg)
  return cfg.causal ~= false and M.DEFAULT_TILE_CAUSAL or M.DEFAULT_TILE
end

--- The attn_spec initializer of a plan: { field, C value } in order.
function M.spec_fields(p)
  local function flag(b) return b and "1" or "0" end
  local f = {
    { "family", "ATTN_FAMILY_LINEAR" }, { "name", ('"%s"'):format(p.name) },
    { "heads_q", p.Hq }, { "heads_kv", p.Hkv }, { "head_dim", p.D }, { "head_dim_v", p.Dv },
    { "causal", flag(p.causal) },
  }
  if p.top_left then f[#f + 1] = { "top_left", "1" } end
  for _, x in ipairs({
    { "window_left", -1 }, { "window_right", p.causal and 0 or -1 }, { "padding", flag(p.padding) },
    { "mask", "ATTN_MASK_NONE" }, { "scale", "1.0f" },
    { "dtype_q", common.DTYPE_ENUM[p.dtype.q] }, { "dtype_kv", common.DTYPE_ENUM[p.dtype.kv] },
    { "dtype_o", common.DTYPE_ENUM[p.dtype.o] }, { "matmul", common.DTYPE_ENUM[p.matmul] },
    { "tile_q", p.tile.q }, { "tile_kv", p.tile.kv }, { "eps", p.c.eps }, { "state", flag(p.state) },
  }) do f[#f + 1] = x end
  return f
end

--- A thread's scratch of a variant, in floats (the call takes every
-- thread's in one block, lib/threads): the tile's (lscratch: the diagonal
-- block's phi(K)^T panels and scores where causal, the tile's output rows
-- and denominators), then for each kv head of the thread's run of heads its
-- running S and z (sz), its packed block of keys with their sums (kbh) and
-- its group's tile of phi(Q) (qbh).  A thread of a run of n kv heads takes
-- fixed + n * head floats: the tile's, then n of each kv head part at its
-- stride (sz_up, kbh_up), every part in whole ATTN_ALIGN bytes, so that each
-- starts on a cache line.
function M.scratch(p, v)
  local function up(n) return math.ceil(n / ALIGN_FLOATS) * ALIGN_FLOATS end
  local scw = v.panels * v.qk.nc -- scores of a row of the diagonal block
  local tile = p.tile.q * v.dvp + p.tile.q
  if p.causal then tile = tile + v.panels * v.dqs * v.qk.nc + p.tile.q * scw end
  local s = {
    tile = tile,
    sz = p.D * v.dvp + v.dqs,
    kbh = v.kb * (v.dqs + v.dvp) + v.dqs,
    qbh = p.group * p.tile.q * v.dqs,
  }
  s.fixed, s.sz_up, s.kbh_up = up(tile), up(s.sz), up(s.kbh)
  s.head = s.sz_up + s.kbh_up + up(s.qbh)
  return s
end

--- Turns a normalized linear config into the plan.
function M.plan(cfg, opts)
  local p = common.common(cfg, opts or {})
  p.D = cfg.head_dim
  p.Dv = cfg.head_dim_v
  p.Hq = cfg.heads_q
  p.Hkv = cfg.heads_kv
  p.group = math.floor(cfg.heads_q / cfg.heads_kv)
  p.causal = cfg.causal ~= false
  common.positions(p, cfg) -- p.top_left, p.pos(i, lk, lq)
  p.padding = cfg.padding
  p.state = cfg.state
  p.eps = cfg.eps
  p.c.eps = util.c_float(cfg.eps)
  -- what the shared library templates ask of a plan: no mask tensor, no
  -- weights output, no dropout, no decode path
  p.mask, p.weights, p.dropout = "none", false, false
  p.decode = { max_q = 0 }

  p.variants = {}
  for _, isa in ipairs(common.isas(cfg)) do
    local v = common.variant(cfg, p, isa)
    -- the products, all on packed f32 rows and panels: scores phi(Q)
    -- phi(K)^T (causal only; MR rows and 1), and P*V (the state update
    -- S += phi(K)^T V over D rows in blocks of MR, the rest in one call;
    -- O = phi(Q) S and the diagonal block's O += A V over a tile's rows)
    local rest = p.D % v.pv.mr
    local pv_rows = { v.pv.mr }
    if isa.lanes > 1 then -- every count: the last rows of a tile and of D
      for mr = v.pv.mr - 1, 1, -1 do pv_rows[#pv_rows + 1] = mr end
    else -- plain C keeps MR, the rest of D and 1, for compile time
      if rest > 1 then pv_rows[#pv_rows + 1] = rest end
      if v.pv.mr > 1 then pv_rows[#pv_rows + 1] = 1 end
    end
    v.pv_has = {}
    for _, r in ipairs(pv_rows) do v.pv_has[r] = true end
    v.mk = { { dt = "f32", qk_rows = p.causal and v.qk_rows or {}, pv_rows = pv_rows } }
    v.pv_rest = rest -- rows of the state update's last block of head dims (0: none)
    -- the diagonal block of a causal tile (at most TQ keys) is transposed
    -- into K^T panels for the scores kernel, through registers where the
    -- ISA spells a transpose; a packing block holds TK keys, or the
    -- diagonal block's panels, whichever is more
    v.panels = math.ceil(p.tile.q / v.qk.nc)
    v.kb = math.max(p.tile.kv, v.panels * v.qk.nc)
    v.transpose_pack = p.causal and isa.transpose ~= nil
    v.scratch = M.scratch(p, v)
    v.lvariant = #p.variants -- its row of the file's table of thread scratch sizes (C, from 0)
    p.variants[#p.variants + 1] = v
  end
  -- FLOPs of a full causal tile of one query head, for the cost comment:
  -- phi(Q) S, the diagonal block's scores and P*V, and folding TQ keys into S
  p.tile_flops = 2 * p.tile.q * p.D * p.Dv * 2 + 2 * p.tile.q * p.tile.q * (p.D + p.Dv)
  p.workspace = true -- attn_NAME_workspace_size: every thread's scratch (families/linear)
  p.spec_fields = M.spec_fields(p)
  return p
end

return M
