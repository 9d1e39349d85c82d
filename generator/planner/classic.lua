--- The classic families' planner (kind = "additive" and kind = "luong"):
-- which projections and scores a config computes, the register blocks of
-- its loops per ISA, the tanh it evaluates, and the attn_spec of the
-- descriptor.  The classic family tables (families/classic.lua) name this
-- module as their planner and give it their score and attn_family enum;
-- docs/kernels.md explains the algorithm.
local common = require("planner")
local families = require("families")
local util = require("util")

local M = {}

--- tanh(x) = x P(x^2) / Q(x^2) on |x| <= TANH_CLAMP (past it tanh is 1 in
-- f32): P of degree 5 and Q of degree 3 in x^2, a fit of the relative
-- error (about 6e-8 in exact arithmetic; at most 3.8e-7 evaluated in f32
-- with these rounded coefficients).  scripts/fit_tanh.c computes them.
M.TANH_CLAMP = 9.0
M.TANH_P = { 9.999999404e-01, 1.291924119e-01, 2.920774976e-03, 9.267530913e-06, -1.278073469e-08,
  1.825591241e-11 }
M.TANH_Q = { 1.0, 4.625252485e-01, 2.376322262e-02, 2.281019406e-04 }
--- Multiplies and FMAs of one tanh and its v . tanh term, per lane (the
-- bench counts the tanh loop's rate with it): x^2, P's 5 and Q's 3 FMAs,
-- x P, the division as a multiply, and the FMA with v.
M.TANH_FMAS = 12

--- Decoder rows are worked on ROW_BLOCK at a time (of one batch): their
-- scores, then their contexts, each a block of keys at a time, so that a
-- block's encoder rows (U and H, KEY_BLOCK_BYTES of them) are read from
-- memory once for all the rows instead of once a row (the scores' blocks
-- and the context's are sized apart).  A block's key count is a multiple
-- of 4 (every ISA's KS and NB), so each key's score is the same
-- computation as without blocks; the context's sums run over the keys in
-- order either way.  The output does not depend on the blocks.  On the
-- AVX2 host, RNNsearch shapes, 64 rows against 1024 keys (U given): 40 ms
-- against 56-100 one row at a time.
M.ROW_BLOCK = 8
M.KEY_BLOCK_BYTES = 256 * 1024

--- The attn_spec initializer of a plan: { field, C value } in order.
function M.spec_fields(p)
  local SCORE_ENUM = { additive = "ATTN_SCORE_ADDITIVE", dot = "ATTN_SCORE_DOT", general = "ATTN_SCORE_GENERAL",
    concat = "ATTN_SCORE_CONCAT" }
  return {
    { "family", families.get(p.family).classic.spec_family },
    { "name", ('"%s"'):format(p.name) },
    { "heads_q", 1 }, { "heads_kv", 1 }, { "head_dim", p.Ds }, { "head_dim_v", p.Dh },
    { "window_left", -1 }, { "window_right", -1 }, { "padding", p.padding and "1" or "0" },
    { "mask", p.mask == "bool" and "ATTN_MASK_BOOL" or "ATTN_MASK_NONE" }, { "scale", "1.0f" },
    { "dtype_q", common.DTYPE_ENUM[p.dtype.q] }, { "dtype_kv", common.DTYPE_ENUM[p.dtype.kv] },
    { "dtype_o", common.DTYPE_ENUM[p.dtype.o] }, { "matmul", common.DTYPE_ENUM[p.matmul] },
    { "score", SCORE_ENUM[p.score] }, { "query_dim", p.Ds }, { "key_dim", p.Dh }, { "attn_dim", p.Da },
    { "bias", p.bias and "1" or "0" },
  }
end

--- The classic kernels have no tiles.
function M.default_tile() return { q = 0, kv = 0 } end

--- A thread's scratch of a variant (cscratch; the call takes every thread's
-- in one block, lib/threads): for each of a block's decoder rows, a part
-- of each type a key (per = "key": the scores, the visible keys' weights,
-- the visible keys and their encoder rows) and the context sums (per: the
-- elements a row), each part on ATTN_ALIGN bytes; key_bytes_max bounds the
-- bytes of a key's parts for the size checks.
function M.scratch(p, v)
  return {
    parts = {
      { name = "e", ctype = "float", per = "key" },
      { name = "w", ctype = "float", per = "key" },
      { name = "vis", ctype = "int64_t", per = "key" },
      { name = "hp", ctype = ("const %s *"):format(p.ctype.kv), per = "key" },
      { name = "cs", ctype = "float", per = v.dhp },
    },
    key_bytes_max = 32,
  }
end

--- Turns a normalized additive or luong config into the plan.
function M.plan(cfg, opts)
  local p = common.common(cfg, opts or {})
  p.classic = true
  p.tile, p.tile_reason = M.default_tile(), "no tiles"
  p.score = families.get(cfg.kind).classic.score(cfg)
  p.Ds, p.Dh, p.Da = cfg.query_dim, cfg.key_dim, cfg.attn_dim or 0
  p.bias, p.padding, p.mask = cfg.bias, cfg.padding, cfg.mask
  -- the parts of the algorithm (docs/kernels.md): tanh scores over an
  -- attention layer (additive, concat) or dot products with the encoder
  -- states (dot, general); a projection of the decoder states (all but
  -- dot: into Da units, or Dh for general); a projection of the encoder
  -- states into Da units (concat always, additive unless U is given)
  p.tanh = p.score == "additive" or p.score == "concat"
  p.NQ = p.tanh and p.Da or (p.score == "general" and p.Dh or 0)
  p.key_proj = p.tanh
  -- the weight matrices: the decoder states' and the encoder states'
  -- (additive: W_s and W_h; concat: the halves of W, h's columns first)
  if p.score == "additive" then
    p.wq = { ptr = "w_s", offset = 0, stride = p.Ds }
    p.wk = { ptr = "w_h", offset = 0, stride = p.Dh }
  elseif p.score == "concat" then
    p.wq = { ptr = "w", offset = p.Dh, stride = p.Dh + p.Ds }
    p.wk = { ptr = "w", offset = 0, stride = p.Dh + p.Ds }
  elseif p.score == "general" then
    p.wq = { ptr = "w", offset = 0, stride = p.Ds }
  end
  p.c.tanh_clamp = util.c_float(M.TANH_CLAMP)
  p.c.tanh_p, p.c.tanh_q = {}, {}
  for i, x in ipairs(M.TANH_P) do p.c.tanh_p[i] = util.c_float(x) end
  for i, x in ipairs(M.TANH_Q) do p.c.tanh_q[i] = util.c_float(x) end
  -- what the shared library templates ask of a plan
  p.weights, p.dropout, p.softcap = false, false, nil
  p.decode = { max_q = 0 }

  p.row_block = M.ROW_BLOCK
  p.variants = {}
  for _, isa in ipairs(common.isas(cfg)) do
    local v = common.variant_base(cfg, p, isa)
    -- the register blocks: dot products of MR rows by NB rows at a time
    -- (MR x NB accumulators), KS keys a step of the tanh scores, CH vectors
    -- of a context row summed in registers (the ISA's classic_block)
    local blk = isa.classic_block
    v.mr, v.nb, v.ks, v.ch = blk.mr, blk.nb, blk.ks, blk.ch
    -- keys of a block: KEY_BLOCK_BYTES of the rows the scores read (U for
    -- the tanh scores, counted as f32, the type of a computed U; H for dot
    -- and general) and of the H rows the context reads
    local function block_of(row_bytes) return math.max(4, math.floor(M.KEY_BLOCK_BYTES / row_bytes / 4) * 4) end
    local size = common.value_bytes(p.dtype.kv)
    v.key_block_s = block_of(p.tanh and 4 * p.Da or size * p.Dh)
    v.key_block_c = block_of(size * p.Dh)
    v.dhp = math.ceil(p.Dh / isa.lanes) * isa.lanes -- a context accumulator row: whole vectors
    -- none of the library's micro-kernels or vector math (the softmax runs
    -- over one row's few keys, in plain C)
    v.mk, v.transpose_pack, v.vmath = {}, false, false
    -- padded row lengths: whole vectors of the projections' outputs
    v.nqp = math.ceil(p.NQ / isa.lanes) * isa.lanes
    v.dap = math.ceil(p.Da / isa.lanes) * isa.lanes
    -- the dot kernels: along Ds (the decoder states' projection; A = S
    -- rows, MR and 1 at a time) and along Dh (the encoder states'
    -- projection, A = H rows, MR and 1; the dot and general scores, A = one
    -- decoder row as stored, or general's projected f32 row).  The B rows
    -- are always dtype_kv (weights or encoder states).  Each: a list of
    -- { dt = A's type, rows = { counts, largest first } }.
    local function kernels(needs)
      local list, at = {}, {}
      for _, n in ipairs(needs) do
        local dt, rows = n[1], n[2]
        if not at[dt] then
          at[dt] = { dt = dt, rows = {} }
          list[#list + 1] = at[dt]
        end
        local t = at[dt]
        local seen = false
        for _, r in ipairs(t.rows) do seen = seen or r == rows end
        if not seen then t.rows[#t.rows + 1] = rows end
        table.sort(t.rows, function(x, y) return x > y end)
      end
      return list
    end
    local s_needs, h_needs = {}, {}
    if p.NQ > 0 then s_needs = { { p.dtype.q, v.mr }, { p.dtype.q, 1 } } end
    if p.key_proj then h_needs = { { p.dtype.kv, v.mr }, { p.dtype.kv, 1 } } end
    if p.score == "dot" then h_needs[#h_needs + 1] = { p.dtype.q, 1 } end
    if p.score == "general" then h_needs[#h_needs + 1] = { "f32", 1 } end
    v.dots, v.doth = kernels(s_needs), kernels(h_needs)
    -- the tanh scores by the type of the U rows they read: the computed U
    -- (f32; concat always, additive without args->u) and args->u (dtype_kv)
    v.tanh_types = {}
    if p.tanh then
      v.tanh_types[1] = "f32"
      if p.score == "additive" and p.dtype.kv ~= "f32" then v.tanh_types[2] = p.dtype.kv end
    end
    v.scratch = M.scratch(p, v)
    p.variants[#p.variants + 1] = v
  end
  p.spec_fields = M.spec_fields(p)
  return p
end

return M
