--- The planner: a validated config in, a plain plan table out.
--
-- Every decision the generated code embodies is made here, as data: which
-- ISA variants exist, the register blocking of the micro-kernels, the tile
-- sizes, the storage types, every constant a template prints.  Templates
-- only read the plan.  This module holds what every family shares; each
-- family's planner (its family table's `planner`) builds on it and adds its own
-- paths, masks and constants.
local isa_registry = require("isa")
local naming = require("naming")
local schema = require("schema")
local util = require("util")

local M = {}

--- The heuristic tile of a normalized config, when it says "auto" and no
-- tuning result exists: its family planner's default_tile.
function M.default_tile(cfg) return M.family(cfg.kind).default_tile(cfg) end

--- Head-dim steps per iteration of the scores kernel's reduction loop; the
-- remainder (D mod QK_UNROLL) is unrolled after it.  Unrolling all of D
-- makes one basic block of D*(MR*NR + MR + NR) statements, which costs
-- compile time (gcc: ~15 s for D = 128 at 6x4) and no speed.
M.QK_UNROLL = 8

--- Head-dim loops of the dot-product kernels (lib/dot) are unrolled up to
-- this many vectors; longer ones (plain C, or a large D) stay C loops, for
-- compile time.
M.UNROLL_MAX_VECTORS = 8

--- An output row's stores (lib/store_o: O = acc * (1 / l) in O's type) are
-- unrolled up to this many vectors; a longer row (plain C, a float a
-- "vector", or a wide Dv) is stored by a C loop over its vectors, so that
-- the epilogue holding it stays a short function (t_dv512's plain C one
-- would be 512 stores).  64 keeps the unrolled stores of every x86 vector
-- ISA up to Dv = 512.  A packed query row (lib/pack's qpack: D scaled
-- into f32) is written the same way past this many vectors of D.
M.STORE_UNROLL_MAX = 64

--- Bytes of a cache line: the prefetch step of the decode path.
M.CACHE_LINE = 64

--- Storage types: the C type a tensor is stored as, and its size.
-- llama.cpp's block types (K/V only): an element is a block of 32 values
M.CTYPE = { f32 = "float", bf16 = "uint16_t", f16 = "uint16_t", q8_0 = "attn_block_q8_0", q4_0 = "attn_block_q4_0" }
M.DTYPE_ENUM = { f32 = "ATTN_DTYPE_F32", bf16 = "ATTN_DTYPE_BF16", f16 = "ATTN_DTYPE_F16", q8_0 = "ATTN_DTYPE_Q8_0",
  q4_0 = "ATTN_DTYPE_Q4_0" }
M.DTYPE_BYTES = { f32 = 4, bf16 = 2, f16 = 2, q8_0 = 34, q4_0 = 18 }
--- Values an element holds: 1, or a block's 32.
M.DTYPE_VALUES = { f32 = 1, bf16 = 1, f16 = 1, q8_0 = 32, q4_0 = 32 }
--- Bytes of one value of storage type t: its element's bytes over the values
-- the element holds (34 / 32 for q8_0, 18 / 32 for q4_0).  Every byte count of
-- K/V rows (decode blocks, pages, lines) goes through this, never DTYPE_BYTES.
-- (An integer where it is one, as Lua 5.3's `/` would not keep it.)
function M.value_bytes(t)
  local b, n = M.DTYPE_BYTES[t], M.DTYPE_VALUES[t]
  return b % n == 0 and math.floor(b / n) or b / n
end

--- log2(e): kernels keep scores in base 2, so every exp is an exp2.
M.LOG2E = 1.4426950408889634

--- Register blocking of the scores kernel S[MR][NR*lanes] += q (x) K^T.
-- The ISA module states the blocking measured best on its hardware
-- (isa.qk_block); the planner fits it to the key tile: NR*lanes must divide
-- tile.kv.
local function qk_blocking(isa, tile_kv)
  local mr, nr = isa.qk_block.mr, isa.qk_block.nr
  while nr > 1 and (tile_kv / isa.lanes) % nr ~= 0 do nr = nr - 1 end
  return { mr = mr, nr = nr }
end

--- Blocking of O[MR][Dv] += P[MR][k] V[k][Dv]: Dv is cut into chunks of at
-- most blk.nvc vectors (as even as possible), blk.mr rows each (blk: the
-- ISA's pv_block or pv_wide).
local function pv_blocking(isa, blk, dv)
  local nv = math.ceil(dv / isa.lanes)
  local nchunks = math.ceil(nv / blk.nvc)
  local best = { mr = blk.mr, nvc = math.ceil(nv / nchunks), nchunks = nchunks,
    late_bcast = blk.late_bcast or false }
  -- the chunks: vector index ranges, the last one may end in a partial vector
  local chunks = {}
  for c = 0, best.nchunks - 1 do
    local first = c * best.nvc
    local count = math.min(best.nvc, nv - first)
    chunks[#chunks + 1] = { first = first, count = count }
  end
  best.chunks = chunks
  best.nv = nv
  -- many chunks (plain C, one float per "vector"): the leading full chunks,
  -- all but the last, run as a C loop instead of unrolled code (compile time)
  best.looped_chunks = 0
  if #chunks > 4 then
    local full = 0
    while full < #chunks - 1 and chunks[full + 1].count == best.nvc do full = full + 1 end
    best.looped_chunks = full
  end
  return best
end

--- The part of an ISA variant every family has: the ISA, its function's
-- name, the names of its symbols (v.N), its vector math and the function
-- attribute that selects it.
function M.variant_base(cfg, plan, isa)
  local v = { isa = isa, name = isa.name, lanes = isa.lanes }
  v.fn = naming.variant(cfg.name, isa.name)
  --- The name of one of this variant's symbols (naming.lua): the ISA, and
  -- the storage type where the op's name carries one, are filled in.
  function v.N(op, t)
    local f = { isa = isa.name }
    for k, x in pairs(t or {}) do f[k] = x end
    local spec = naming.OPS[op]
    if spec and type(spec.dtype) == "string" then f.dtype = f.dtype or plan.dtype[spec.dtype] end
    return naming.build(cfg.name, op, f)
  end
  --- The name of one of this variant's micro-kernels, named by its math
  -- (naming.micro): t holds m, n and fields (a list, naming.FIELDS), and
  -- dtype where the op's storage type is not the plan's (f32 for an op
  -- without one); the ISA and the head dims come from here.
  function v.U(op, t)
    local spec = naming.OPS[op]
    local f = { isa = isa.name, m = t.m, n = t.n, dtype = t.dtype, fields = t.fields, d = plan.D, v = plan.Dv }
    if type(spec.dtype) == "string" then f.dtype = f.dtype or plan.dtype[spec.dtype] end
    return naming.micro(op, f)
  end
  -- the streaming decode's scores of R rows against n keys through the softmax
  -- step (lib/dot): integer block dots (i8, v.i8), softcapped scores (sc: the cap
  -- and its inverse are its last arguments)
  v.sqk_fn = function(R, n)
    local f = {}
    if v.i8 then f[#f + 1] = "i8" end
    if plan.softcap then f[#f + 1] = "sc" end
    return v.U("sqk", { m = R, n = n, fields = #f > 0 and f or nil })
  end
  -- vector exp2 and tanh expressions: the ISA's own, or lib/vmath's
  v.exp2 = function(x) return isa.exp2 and isa.exp2(x) or (naming.shared("exp2", isa.name) .. "(" .. x .. ")") end
  v.tanh = function(x) return isa.tanh and isa.tanh(x) or (naming.shared("tanh", isa.name) .. "(" .. x .. ")") end
  local attr = isa.target and ('__attribute__((target("%s")))'):format(isa.target) or (isa.attr or "")
  v.target_attr = attr
  v.attr = attr ~= "" and (attr .. " ") or "" -- what precedes a function of this variant
  return v
end

--- One ISA variant: the blocking of the library's micro-kernels (scores,
-- P*V), packed row widths, names and spellings every family uses.
function M.variant(cfg, plan, isa)
  local v = M.variant_base(cfg, plan, isa)
  local qk = qk_blocking(isa, plan.tile.kv)
  local pv = pv_blocking(isa, isa.pv_block, plan.Dv)
  v.qk = { mr = qk.mr, nr = qk.nr, nc = qk.nr * isa.lanes, unroll = M.QK_UNROLL }
  v.pv = pv
  v.dv_tail = plan.Dv % isa.lanes -- lanes used by the last vector, 0 = full
  v.dvp = pv.nv * isa.lanes -- O and packed V rows: Dv in whole vectors
  v.store_loop = pv.nv > M.STORE_UNROLL_MAX -- an output row's stores in a C loop (lib/store_o)
  v.dqs = math.ceil(plan.D / isa.lanes) * isa.lanes -- packed Q rows: D in whole vectors
  v.pack_loop = v.dqs / isa.lanes > M.STORE_UNROLL_MAX -- a query row's packing in C loops (lib/pack)
  -- matmul = "int8": the decode path scores q8_0-quantized query rows by
  -- integer block dots (isa/int8.lua), its packed rows holding codes,
  -- corrections and block scales in the same DQS floats (lib/pack's qpacki)
  v.i8 = plan.matmul == "int8"
  -- O in f32 whole vectors can be stored non-temporally where the ISA
  -- spells it (the runtime decides per call: attn_stream_output)
  v.stream_o = isa.stream ~= nil and plan.dtype.o == "f32" and plan.Dv % isa.lanes == 0
  -- K^T panels are packed lanes x lanes blocks at a time through registers
  -- where the ISA spells a transpose and D holds at least one block
  -- (with pair dot products, v.dp below, blocks of lanes x lanes pairs; a
  -- 16-bit K is widened a vector at a time into an f32 stage first)
  local dp = isa.dp ~= nil and plan.matmul == "bf16"
  v.transpose_pack = isa.transpose ~= nil and (dp and plan.D >= 2 * isa.lanes or plan.D >= isa.lanes)
  -- the row counts the scores kernel is generated for: a full block, and 1
  -- for the rest (the prefill path's f32 scores also half a block, below).
  -- The decode path calls it with the roles swapped: keys broadcast (MR of
  -- them) against packed Q^T panels.
  v.qk_rows = qk.mr > 1 and { qk.mr, 1 } or { 1 }
  -- P*V: every row count up to MR on vector ISAs, up to the wider blocking's
  -- below where there is one (the decode path's kv heads often have fewer
  -- rows than MR: Llama-3's 4 at Lq = 1; the prefill path's set is below);
  -- plain C (one float per "vector", Dv unrolled) keeps MR and 1, for
  -- compile time
  local pv_mr_and_1 = pv.mr > 1 and { pv.mr, 1 } or { 1 }
  local pv_prefill = isa.lanes > 1 and pv.mr >= 4 and { pv.mr, math.floor(pv.mr / 2), 1 } or pv_mr_and_1
  -- the decode path's rows past MR, where the ISA has a wider blocking for
  -- them (isa.pv_wide) and the cache is f32: the decode path reads V in
  -- place, so the fewer calls a kv head's rows take, the fewer times a V row
  -- comes in from L2 (an f16 cache measured slower so at Lq = 2 and 4 of
  -- Llama-3-8B against 32768 keys, by 8-12%, and keeps MR)
  v.pv_wide = isa.lanes > 1 and isa.pv_wide and plan.dtype.kv == "f32" and pv_blocking(isa, isa.pv_wide, plan.Dv)
    or nil
  v.pv_of = function(mr) return v.pv_wide and mr > pv.mr and v.pv_wide or pv end -- the blocking of MR rows
  local function down_from(n) -- n, n - 1, ..., 1
    local t = {}
    for mr = n, 1, -1 do t[#t + 1] = mr end
    return t
  end
  local prefill_all = isa.lanes > 1 and down_from(pv.mr) or pv_mr_and_1 -- every row count up to MR
  v.pv_rows = isa.lanes > 1 and down_from(v.pv_wide and v.pv_wide.mr or pv.mr) or pv_mr_and_1
  local dtype = plan.dtype.kv -- what the decode path's micro-kernels read
  -- the micro-kernels read their broadcast rows (qk's A) or V rows (pv) in
  -- the storage type their name carries: f32 for the prefill path's packed
  -- panels, the K/V type for the decode path, which reads the cache in place
  -- (names: a narrow instance, one vector of a wider panel, names the
  -- panel's stride, p<nc>; pv kernels that prefetch, v.pv_prefetch of the
  -- sdpa planner, pf)
  local function panel(ncw) return ncw ~= v.qk.nc and { "p" .. v.qk.nc } or nil end
  v.qk_fn = function(mr, dt, ncw)
    ncw = ncw or v.qk.nc
    return v.U("qk", { m = mr, n = ncw, dtype = dt or "f32", fields = panel(ncw) })
  end
  v.pv_fn = function(mr, dt)
    return v.U("pv", { m = mr, n = plan.Dv, dtype = dt or "f32", fields = v.pv_prefetch and { "pf" } or nil })
  end
  -- the decode path's panel scores that also prefetch (v.qk_prefetch, sdpa planner)
  v.qkpf_fn = function(mr) return v.U("qkpf", { m = mr, n = v.qk.nc, dtype = "f32" }) end
  -- the blocked decode path's dot products of 4 rows against 2 keys (lib/dot)
  v.dot_fn = function() return v.U("dot", { m = 4, n = 2, fields = v.i8 and { "i8" } or nil }) end
  -- its score kernels (lib/decode_scores): lanes reads Q^T rows nc floats
  -- apart; each prefetches where the schedule's rows have whole lines
  v.scores_fn = function(op, m, n)
    local f = {}
    if op == "lanes" then f[1] = "p" .. v.qk.nc end
    if v.dsched and v.dsched.row_lines then f[#f + 1] = "pf" end
    return v.U(op, { m = m, n = n, dtype = op ~= "lanes" and "f32" or nil, fields = #f > 0 and f or nil })
  end
  -- which instances exist: qk with MR and 1 rows on both paths; pv with
  -- v.pv_rows on the decode path (its K/V type, a kv head's rows).  The
  -- prefill path (packed panels, f32) takes the widest kernel that fits a
  -- tile's rows left: every count up to MR where the decode path reads f32 and has
  -- them anyway (a short last tile of 64 rows is 6 x 10 + 4, not 6 x 10 +
  -- 1 x 4), else MR, half MR and 1 (4 rows left: 3 + 1): all counts in f32
  -- besides a 16-bit cache's set took a bf16 preset's compile from 3.8 to
  -- 5.6 s of CPU.  The pair dot products keep MR and 1.
  local decode = plan.decode and plan.decode.max_q > 0
  local decode_f32 = decode and dtype == "f32"
  -- the prefill path's products: f32 FMAs on packed f32 panels, or (an ISA
  -- with pair dot products, matmul = "bf16") pairwise bf16 dot products on
  -- panels packed as pairs: Q and K^T along D, P and V along the keys
  v.dp = dp
  if dp then
    v.dp_pairs = math.ceil(plan.D / 2) -- pairs of head dims in a packed Q row and a K^T panel
    v.qkdp_fn = function(mr, ncw)
      ncw = ncw or v.qk.nc
      return v.U("qkdp", { m = mr, n = ncw, dtype = "bf16", fields = panel(ncw) })
    end
    v.pvdp_fn = function(mr) return v.U("pvdp", { m = mr, n = plan.Dv, dtype = "bf16" }) end
    v.prefill_pv_rows = pv_mr_and_1
    v.mkdp = { qk_rows = v.qk_rows, pv_rows = v.prefill_pv_rows }
    v.mk = decode and { { dt = dtype, qk_rows = v.qk_rows, pv_rows = v.pv_rows } } or {}
  else
    v.prefill_pv_rows = decode_f32 and prefill_all or pv_prefill
    -- the prefill path's f32 scores also take half a block (4 rows where MR
    -- is 8, 2 where it is 4) for a query tile's last rows: 4-7 rows left
    -- over (a tile of 20 rows: Lq = 20) took a single-row call each, each
    -- reading the whole K^T panel for 2 FMAs a broadcast, about three times
    -- a full block's time a row (the pair dot products keep MR and 1, and
    -- plain C too, for compile time: a preset's build parts compile at once)
    v.qk_half = isa.lanes > 1 and qk.mr >= 4 and math.floor(qk.mr / 2) or nil
    local prefill_qk_rows = v.qk_half and { qk.mr, v.qk_half, 1 } or v.qk_rows
    -- (an f32 cache's decode path shares the prefill path's f32 instances,
    -- and has its wider rows besides)
    v.mk = { { dt = "f32", qk_rows = prefill_qk_rows, pv_rows = decode_f32 and v.pv_rows or v.prefill_pv_rows,
      prefill = true } }
    if decode and not decode_f32 then v.mk[2] = { dt = dtype, qk_rows = v.qk_rows, pv_rows = v.pv_rows } end
  end
  -- vector registers each micro-kernel keeps live, for the cost comments:
  -- accumulators, then the loads of a step (a panel row of B and one
  -- broadcast; P broadcasts of every row and one V vector)
  v.qk.regs_of = function(mr, nr) nr = nr or qk.nr; return mr * nr + nr + 1 end
  local function pv_regs(blk, mr) return mr * blk.nvc + (blk.late_bcast and blk.nvc or mr) + 1 end
  v.pv.regs_of = function(mr) return pv_regs(v.pv_of(mr), mr) end
  --- C statements: dst[0..n) = src[0..n) (K/V elements) widened to f32 a vector
  -- at a time with the loop index i (declared by the caller), the last vector
  -- partial (zero past n); ind: their indent.  An f32 row goes through a
  -- register gcc may not see through (ATTN_IN_REGISTER): it would turn the copy
  -- loop into a call to memcpy per row.
  v.widen_row = function(dst, src, n, ind, i)
    local L = isa.lanes
    local full = n - n % L
    local s
    if plan.kv_block then -- whole blocks (n a multiple of 32): a block's vectors dequantized
      return ("for (%s = 0; %s < %d; %s += %d)\n%s    %s;"):format(i, i, n, i, L, ind,
        isa.store(dst .. " + " .. i, isa.load_block(plan.kv_block, src, i)))
    elseif plan.dtype.kv == "f32" then
      s = ("for (%s = 0; %s < %d; %s += %d) {\n%s    %s x = %s;\n%s    ATTN_IN_REGISTER(x);\n%s    %s;\n%s}"):format(
        i, i, full, i, L, ind, isa.vec, isa.load(src .. " + " .. i), ind, ind, isa.store(dst .. " + " .. i, "x"), ind)
    else
      s = ("for (%s = 0; %s < %d; %s += %d)\n%s    %s;"):format(i, i, full, i, L, ind,
        isa.store(dst .. " + " .. i, isa.load_from(plan.dtype.kv, src .. " + " .. i)))
    end
    if full < n then
      local tail = isa.loadn_from(plan.dtype.kv, src .. " + " .. full, n - full)
      s = s .. "\n" .. ind .. isa.store(dst .. " + " .. full, tail) .. ";"
    end
    return s
  end
  return v
end

--- The plan fields every family has: names, tiles, storage types, the
-- shared constants.  `opts.tile` overrides the tile choice (the tuner uses
-- it); `opts.tile_reason` says why.
function M.common(cfg, opts)
  local p = {
    name = cfg.name,
    family = cfg.kind,
    config = cfg,
    entry = naming.entry(cfg.name),
    kernel = naming.kernel(cfg.name),
  }
  if opts.tile then
    p.tile, p.tile_reason = opts.tile, opts.tile_reason or "given"
  elseif type(cfg.tile) == "table" then
    p.tile, p.tile_reason = cfg.tile, "set in the config"
  else
    p.tile, p.tile_reason = M.default_tile(cfg), "heuristic default (tile = \"auto\", no tuning result)"
  end
  -- storage types: one per tensor (Q, K/V, O), and the products' operand type
  p.dtype = schema.dtypes(cfg.dtype)
  p.matmul = cfg.matmul or "f32"
  p.ctype = { q = M.CTYPE[p.dtype.q], kv = M.CTYPE[p.dtype.kv], o = M.CTYPE[p.dtype.o] }
  p.ctypes = M.CTYPE -- storage type -> C type
  -- the reduced types the file converts (its scalar conversions and ISA helpers)
  p.reduced = {}
  for _, t in pairs(p.dtype) do
    if t ~= "f32" then p.reduced[t] = true end
  end
  -- K/V in a block type: its elements are blocks of kv_values values (a
  -- block's scale is f16: the file converts f16 too)
  p.kv_values = M.DTYPE_VALUES[p.dtype.kv]
  p.kv_block = p.kv_values > 1 and p.dtype.kv or nil
  if p.kv_block then p.reduced.f16 = true end
  p.has_reduced = next(p.reduced) ~= nil
  --- C expressions: a stored value of type dt as f32, and an f32 narrowed to dt
  function p.widen(t, x) return t == "f32" and x or ("attn_widen_%s__scalar(%s)"):format(t, x) end
  --- C expression: value e of a row of K/V elements (row: a pointer to its
  -- first element); a block type's value e is in block e / 32
  function p.kv_value(row, e)
    if p.kv_block then return ("attn_widen_%s__scalar(%s, %s)"):format(p.kv_block, row, e) end
    return p.widen(p.dtype.kv, ("%s[%s]"):format(row, e))
  end
  function p.narrow(t, x) return t == "f32" and x or ("attn_narrow_%s__scalar(%s)"):format(t, x) end
  -- every number the templates print, as C literals (a family adds its own)
  local c_float = util.c_float
  p.c = { log2e = c_float(M.LOG2E), ln2 = c_float(1 / M.LOG2E), neg_2log2e = c_float(-2 * M.LOG2E) }
  p.unroll_max_vectors = M.UNROLL_MAX_VECTORS
  p.cache_line = M.CACHE_LINE
  p.line_floats = math.floor(M.CACHE_LINE / M.value_bytes(p.dtype.kv)) -- elements of a K/V row in a line
  if p.kv_block then -- values a block type's prefetch steps by: a block's (its 34 or 18 bytes, about a line's)
    p.line_floats = p.kv_values
    p.kv_bytes = M.DTYPE_BYTES[p.dtype.kv]
  end
  return p
end

--- Positions: the one place the alignment of query rows to keys is
-- decided, for every family with a causal rule.  Sets p.top_left and
-- p.pos(i, lk, lq), which spells the position of query row i of lq rows
-- when lk keys are valid (each a C expression) as a C expression:
-- i + lk - lq (bottom-right: causal = true, and configs without causal),
-- or i (top-left: causal = "top_left").  Every template asks it.
function M.positions(p, cfg)
  local top_left = cfg.causal == "top_left"
  p.top_left = top_left
  function p.pos(i, lk, lq)
    if top_left then return i end
    return ("%s + %s - %s"):format(i, lk, lq)
  end
end

--- The ISA modules of a config, best first.
function M.isas(cfg)
  local t = {}
  for _, name in ipairs(cfg.isa) do t[#t + 1] = assert(isa_registry.get(name)) end
  return t
end

--- A family's planner module (its family table's `planner`).
function M.family(kind) return require("families").planner(kind) end

--- The build parts of a plan's source file (lib/dispatch): part 0 the
-- dispatch, then one per variant in order (v.build_part), except that a
-- variant calling another's code (v.decode_by) is in that one's part, since
-- the code is static.  Sets p.build_parts, the number of the last part.
local function build_parts(p)
  local n = 0
  for _, v in ipairs(p.variants) do
    if not v.decode_by then
      n = n + 1
      v.build_part = n
    end
  end
  for _, v in ipairs(p.variants) do
    if v.decode_by then v.build_part = v.decode_by.build_part end
  end
  p.build_parts = n
  return p
end

--- Turns a normalized config into the plan of its family.  opts: tile,
-- tile_reason, and what the family's planner takes.
function M.plan(cfg, opts)
  local p, err = M.family(cfg.kind or require("families").DEFAULT).plan(cfg, opts or {})
  if not p then return nil, err end
  return build_parts(p)
end

return M
