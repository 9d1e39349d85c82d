--- The planner: a validated config in, a plain plan table out.
--
-- Every decision the generated code embodies is made here, as data: which
-- ISA variants exist, the register blocking of the two micro-kernels, the
-- tile sizes, which mask code paths exist, the ALiBi slopes.  Templates only
-- read the plan.
local isa_registry = require("isa")
local naming = require("naming")
local util = require("util")

local M = {}

--- Heuristic tiles when the config says "auto" and no tuning result exists.
M.DEFAULT_TILE = { q = 96, kv = 128 }

--- Decode: keys per split (one unit of parallel work, merged by LSE) and
-- keys per block inside a split (one pass of scores, softmax, P*V).  A
-- split is DECODE_CHUNK keys, doubled while a sequence would have more than
-- DECODE_MAX_SPLITS of them: each split costs a setup and a merge (Llama-3-8B
-- at 32768 keys, one thread: 8.3 ms with 64 splits of 512, 7.9-8.0 with 32
-- of 1024), and 32 splits a sequence still feed many threads.
M.DECODE_CHUNK = 512
M.DECODE_MAX_SPLITS = 32
M.DECODE_BLOCK = 64
--- Keys ahead that the decode path prefetches K and V rows.
M.DECODE_PREFETCH = 8

--- The streaming decode path reads the cache one key at a time, every kv
-- head of it, against all query rows held in L1: it is generated where the
-- ISA has four-float registers (isa.q4) and taken for up to 4 rows per kv
-- head while the rows' Q and O fit STREAM_L1 bytes (a conservative L1).
-- After a kv head's P*V at key j it prefetches every line of that head's K
-- and V rows at key j + STREAM_PREFETCH (a cache with a key's kv heads
-- adjacent: 2 pages ahead for Llama-3-8B) or j + STREAM_PREFETCH_HEAD_MAJOR
-- (a kv head's keys adjacent: 4 KiB ahead at D = 128), so that they are in
-- L1 when that key comes; docs/decode.md has the measurements.
M.STREAM_L1 = 32 * 1024
M.STREAM_PREFETCH = 2
M.STREAM_PREFETCH_HEAD_MAJOR = 8

--- Head-dim steps per iteration of the scores kernel's reduction loop; the
-- remainder (D mod QK_UNROLL) is unrolled after it.  Unrolling all of D
-- makes one basic block of D*(MR*NR + MR + NR) statements, which costs
-- compile time (gcc: ~15 s for D = 128 at 6x4) and no speed.
M.QK_UNROLL = 8

--- ALiBi slopes of the ALiBi paper for n heads (DESIGN.md section 3).
function M.alibi_slopes(n)
  local function pow2_rule(c)
    local s = {}
    for h = 1, c do s[h] = 2 ^ (-8 * h / c) end
    return s
  end
  local c = 1
  while c * 2 <= n do c = c * 2 end
  local slopes = pow2_rule(c)
  if c < n then
    local extra = pow2_rule(2 * c)
    local i = 1
    while #slopes < n do
      slopes[#slopes + 1] = extra[i]
      i = i + 2
    end
  end
  return slopes
end

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
-- most isa.pv_block.nvc vectors (as even as possible), MR rows each.
local function pv_blocking(isa, dv)
  local nv = math.ceil(dv / isa.lanes)
  local nchunks = math.ceil(nv / isa.pv_block.nvc)
  local best = { mr = isa.pv_block.mr, nvc = math.ceil(nv / nchunks), nchunks = nchunks }
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

--- One ISA variant of the kernel.
local function plan_variant(cfg, plan, isa)
  local v = { isa = isa, name = isa.name, lanes = isa.lanes }
  local qk = qk_blocking(isa, plan.tile.kv)
  local pv = pv_blocking(isa, cfg.head_dim_v)
  v.qk = { mr = qk.mr, nr = qk.nr, nc = qk.nr * isa.lanes, unroll = M.QK_UNROLL }
  v.pv = pv
  v.dv_tail = cfg.head_dim_v % isa.lanes -- lanes used by the last vector, 0 = full
  -- K^T panels are packed lanes x lanes blocks at a time through registers
  -- where the ISA spells a transpose and D holds at least one block
  v.transpose_pack = isa.transpose ~= nil and cfg.head_dim >= isa.lanes
  -- the two row counts each micro-kernel is generated for: a full block, and 1 for the rest
  v.qk_rows = qk.mr > 1 and { qk.mr, 1 } or { 1 }
  v.pv_rows = pv.mr > 1 and { pv.mr, 1 } or { 1 }
  -- decode: S^T = K Q^T with keys broadcast (MR of them) and query rows along
  -- the lanes (NR vectors): the scores kernel's blocking with the roles swapped
  v.dqk = { mr = qk.mr, nr = qk.nr, nc = qk.nr * isa.lanes }
  v.dqk_rows = qk.mr > 1 and { qk.mr, 1 } or { 1 }
  -- fewer rows than a panel: dot products of packed rows (stride: D in whole vectors)
  v.dq_stride = math.ceil(cfg.head_dim / isa.lanes) * isa.lanes
  -- decode P*V: a kernel for every row count up to MR on vector ISAs (a kv
  -- head's rows are often fewer than MR: Llama-3's 4 at Lq = 1); plain C
  -- (one float per "vector", Dv unrolled) keeps MR and 1, for compile time
  if isa.lanes > 1 then
    v.dpv_rows = {}
    for mr = pv.mr, 1, -1 do v.dpv_rows[#v.dpv_rows + 1] = mr end
  else
    v.dpv_rows = v.pv_rows
  end
  -- streaming decode: query rows per call it serves, and the rows per kv
  -- head (group * Lq, at most 4) each needs a step kernel for
  if isa.q4 and plan.decode.max_q > 0 and plan.group <= 4 then
    local dvp = pv.nv * isa.lanes
    local bytes_per_q = plan.Hq * (v.dq_stride + dvp) * 4 -- Q and O of one query row of every head
    local max_q = math.min(math.floor(4 / plan.group), math.floor(M.STREAM_L1 / bytes_per_q), plan.decode.max_q)
    if max_q >= 1 then
      v.stream = { max_q = max_q, rows = {}, prefetch = M.STREAM_PREFETCH,
        prefetch_head_major = M.STREAM_PREFETCH_HEAD_MAJOR }
      for lq = 1, max_q do v.stream.rows[lq] = plan.group * lq end
    end
  end
  v.fn = naming.variant(cfg.name, isa.name)
  v.qk_fn = function(mr) return naming.qk(cfg.name, mr, v.qk.nc, isa.name) end
  v.pv_fn = function(mr) return naming.pv(cfg.name, mr, cfg.head_dim_v, isa.name) end
  v.target_attr = isa.target and ('__attribute__((target("%s")))'):format(isa.target) or (isa.attr or "")
  -- registers each kernel keeps live, for the cost comments
  v.qk.regs = qk.mr * qk.nr + qk.nr + qk.mr
  v.pv.regs = pv.mr * pv.nvc + pv.nvc + pv.mr
  return v
end

--- Turns a normalized config into the plan.  `opts.tile` overrides the
-- tile choice (the tuner uses it); `opts.tile_reason` says why.  Likewise
-- `opts.decode_block` and `opts.decode_chunk` override the decode path's
-- constants, and `opts.decode_reason` says why.
function M.plan(cfg, opts)
  opts = opts or {}
  local p = {
    name = cfg.name,
    config = cfg,
    D = cfg.head_dim,
    Dv = cfg.head_dim_v,
    Hq = cfg.heads_q,
    Hkv = cfg.heads_kv,
    group = math.floor(cfg.heads_q / cfg.heads_kv), -- exact; floor keeps it an integer on Lua 5.3+
    entry = naming.entry(cfg.name),
    kernel = naming.kernel(cfg.name),
  }

  -- tiles
  if opts.tile then
    p.tile, p.tile_reason = opts.tile, opts.tile_reason or "given"
  elseif type(cfg.tile) == "table" then
    p.tile, p.tile_reason = cfg.tile, "set in the config"
  else
    p.tile, p.tile_reason = M.DEFAULT_TILE, "heuristic default (tile = \"auto\", no tuning result)"
  end

  -- masks: which code paths exist
  local w = cfg.window
  p.causal = cfg.causal
  p.window_left = w.left
  p.window_right = w.right
  p.global_tokens = cfg.global_tokens
  p.has_left = w.left >= 0
  p.has_right = w.right >= 0 and not cfg.causal -- causal already bounds the right side at p
  p.has_global = cfg.global_tokens > 0 and (p.has_left or p.has_right)
  p.padding = cfg.padding
  p.mask = cfg.mask
  -- keys outside [0, Lk_b) or outside a row's span exist only with these
  p.has_spans = p.causal or p.has_left or p.has_right or p.padding
  -- the kernel keeps scores in base 2: everything that adds to a score is
  -- scaled by log2(e) once here, and every exp becomes an exp2
  local LOG2E = 1.4426950408889634
  p.scale = cfg.scale
  p.qscale = cfg.scale * LOG2E
  p.softcap = cfg.softcap
  p.softcap2 = cfg.softcap and cfg.softcap * LOG2E
  p.alibi = cfg.alibi
  if cfg.alibi then
    p.alibi_slopes = {}
    for h, s in ipairs(M.alibi_slopes(cfg.heads_q)) do p.alibi_slopes[h] = util.c_float(s * LOG2E) end
  end

  -- decode path: taken when Lq <= max_q; keys split in chunks whose length
  -- depends on Lk only, never on the thread count
  p.decode = { max_q = cfg.decode_max_q, chunk = opts.decode_chunk or M.DECODE_CHUNK,
    max_splits = M.DECODE_MAX_SPLITS,
    block = opts.decode_block or M.DECODE_BLOCK, prefetch = M.DECODE_PREFETCH,
    reason = (opts.decode_block or opts.decode_chunk) and (opts.decode_reason or "given") or nil }

  p.variants = {}
  for _, name in ipairs(cfg.isa) do
    local isa = assert(isa_registry.get(name))
    p.variants[#p.variants + 1] = plan_variant(cfg, p, isa)
  end

  -- FLOPs per full tile, for the cost comment: scores and P*V
  p.tile_flops = 2 * p.tile.q * p.tile.kv * (p.D + p.Dv)
  return p
end

return M
