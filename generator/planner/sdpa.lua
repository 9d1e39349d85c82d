--- The sdpa family's planner: masks and score terms, the prefill tiles'
-- FLOPs, the decode path (splits, blocks, prefetch) and its streaming
-- kernel, the attn_spec of the descriptor.  Builds on planner (the parts
-- every family shares).
local common = require("planner")
local schema = require("schema")
local util = require("util")
local naming = require("naming")
local decode = require("planner.sdpa_decode")
local prefill = require("planner.sdpa_prefill")

local M = {}

--- Heuristic tiles (tile = "auto", no tuning result): 96 query rows against
-- the longer key tile, 256 or 128 keys, whose packed K and V (f32) take at
-- most TILE_KV_BYTES, so that a tile's K, V, scores, Q and O stay in a 1 MiB
-- L2.  Causal prefill, H 8, D 128, one Zen 5 thread, 96 x 256 against
-- 96 x 128 (alternated, best to worst): L 512 3.15-3.30 against 3.20-3.47 ms,
-- 1024 11.5-12.4 against 11.8-12.7; 2-4% faster from 256 to 2048 keys in
-- two alternations days apart; D = 64 the same.  Tunes on an Intel Xeon
-- and an AVX2 EPYC picked 256 keys too (docs/tuning.md).
M.DEFAULT_TILE_Q = 96
M.DEFAULT_TILE_KVS = { 256, 128 }
M.TILE_KV_BYTES = 262144

--- The heuristic tile of a normalized sdpa config.
function M.default_tile(cfg)
  local kvs = M.DEFAULT_TILE_KVS -- longest first
  for _, kv in ipairs(kvs) do
    if kv * (cfg.head_dim + cfg.head_dim_v) * 4 <= M.TILE_KV_BYTES then return { q = M.DEFAULT_TILE_Q, kv = kv } end
  end
  return { q = M.DEFAULT_TILE_Q, kv = kvs[#kvs] }
end

--- Decode: keys per split (one unit of parallel work, merged by LSE) and
-- keys per block inside a split (one pass of scores, softmax, P*V).  A
-- split is DECODE_CHUNK keys, doubled while a sequence would have more than
-- DECODE_MAX_SPLITS of them: each split costs a setup and a merge (Llama-3-8B
-- at 32768 keys, one thread: 8.3 ms with 64 splits of 512, 7.9-8.0 with 32
-- of 1024), and 32 splits a sequence still feed many threads.
M.DECODE_CHUNK = 512
M.DECODE_MAX_SPLITS = 32
M.DECODE_BLOCK = 64
--- The blocked decode kernel prefetches the next block's K and V (every kv
-- head) while it works on one, so a block is at most DECODE_BLOCK_BYTES of
-- them: DECODE_BLOCK keys where that fits, else fewer, a multiple of 8
-- (Llama-3-8B, f32: 16 keys; at 32768 keys, one thread, on Zen 5, Lq = 2 took
-- 13.3 ms with blocks of 16 and 14.5 with 32, Lq = 4 16.3 and 16.6; Falcon-7B's
-- one kv head keeps 64, 9% faster than 16 at Lq = 1; docs/decode.md; on Zen 4
-- the blocked kernel scales it by its rows, DECODE_BLOCK_SCALE below).
-- A tuned block (opts.decode_block) is taken as it is.
M.DECODE_BLOCK_BYTES = 128 * 1024
--- Where the blocked kernel's score kernels prefetch its next block inside
-- their loops, a line an iteration, rather than between calls (the lanes
-- kernel's calls all of it, the pairs kernel's half), on AMD Zen 4 at 32768
-- keys: Llama-3-8B (rows of 8 lines) Lq = 2 / 4 14.4-14.6 -> 13.6 and 24.0
-- -> 22.85 ms, Gemma-2-9B (16 lines) Lq = 4 / 8 33 -> 27.7 and 56.5 -> 49;
-- GPT-2 (4 lines) Lq = 8 9.9 -> 10.1, so rows shorter than this many lines
-- keep the prefetch between calls (docs/decode.md).
M.ROWS_IN_SCORES_LINES = 8
--- Where that prefetch goes to L2 (AMD Zen 4 and 5), the blocked kernel's block
-- follows the rows' work a key: DECODE_BLOCK keys scaled by these factors
-- where a kv head's rows take the pairs or dot-product scores (below one
-- panel), one panel, and more panels (a multiple of 8 keys, at least 8, at
-- most the larger of DECODE_BLOCK and the block itself); one vector of rows
-- in the lanes kernel (not in pairs of D: AVX2's 5-8 rows, a 16-bit cache's)
-- keeps DECODE_BLOCK.  Llama-3-8B on Zen 4, 32768 keys (blocks
-- of 8 / 16 / 32 / 64 keys): Lq = 2 12.8 / 13.2-13.6 / 14.7 ms, Lq = 4 24.4 /
-- 22.8 / 22.3 / 22.4, Lq = 8 - / 45.2-45.4 / 43.9-44.2 / 44.6, Lq = 16 - /
-- 90.2-91.3 / 87.6-88.1 / 86.4-87.4; on Zen 5, the lanes kernel's 16 keys
-- against 32, Lq = 2 with --isa avx2: 16.6-17.3 against 19.4-20.0 ms
-- (docs/decode.md).
M.DECODE_BLOCK_SCALE = { few = 0.5, one = 2, many = 4 }

--- The prefill path packs a kv head's K^T panels and V rows and runs every
-- query tile of its query heads over them.  Against a long cache the packed
-- keys of one kv head outgrow the caches (1 KiB a key for D = Dv = 128 in
-- f32: 32 MiB at 32768 keys), and each query tile then reads them from
-- memory again.  Past PREFILL_CHUNK_FROM bytes they are packed and run a
-- chunk of PREFILL_CHUNK_BYTES at a time instead, every query tile over a
-- chunk before the next, the rows' running sums (O, m, l) carried from
-- chunk to chunk.  Llama-3-8B on one Zen 5 core, 32 query rows against
-- 32768 keys: 151-157 -> 113-119 ms; chunks of 1024 keys cost a causal
-- prefill of 4096 keys 5-8% (a unit's Q packing and sums once a chunk), so
-- shorter caches keep one pass (docs/kernels.md).  The config's
-- prefill_chunk sets the chunk in keys (0: never).
M.PREFILL_CHUNK_FROM = 8388608
M.PREFILL_CHUNK_BYTES = 2097152

--- Variant v's chunks of packed K/V: keys a chunk (whole key tiles) and the
-- keys past which a cache is run in chunks (nil: never).
function M.prefill_chunk(p, v, cfg)
  local tk = p.tile.kv
  if cfg.prefill_chunk == 0 then return nil, nil end
  if cfg.prefill_chunk then
    local keys = math.ceil(cfg.prefill_chunk / tk) * tk
    return keys, keys
  end
  local per_key = v.dp and 2 * (2 * v.dp_pairs + v.dvp) or 4 * (p.D + v.dvp)
  return math.max(1, math.floor(M.PREFILL_CHUNK_BYTES / per_key / tk)) * tk, math.floor(M.PREFILL_CHUNK_FROM / per_key)
end

--- The heuristic decode block of a normalized sdpa config (what the plan
-- takes without a tuned block; tune marks that candidate).  With shared_kv
-- a key's K and V are one row of head_dim values.
function M.default_decode_block(cfg)
  local values = cfg.shared_kv and cfg.head_dim or cfg.head_dim + cfg.head_dim_v
  local per_key = cfg.heads_kv * values * common.value_bytes(schema.dtypes(cfg.dtype).kv)
  local keys = math.floor(M.DECODE_BLOCK_BYTES / per_key / 8) * 8
  return math.max(8, math.min(M.DECODE_BLOCK, keys))
end

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
--- The hardware prefetchers stop at 4 KiB page boundaries, and a key's rows
-- of every kv head fill one page of K and one of V for Llama-3-8B: where the
-- runtime picks the f32 two-key step (AMD Zen 4), the step also asks for the
-- first lines (4, lib/rows' prefetch_key_start) of K and V of the keys
-- STREAM_PAGE_AHEAD ahead, which trains the prefetcher on those pages long
-- before the rows prefetch above reaches them.  Zen 4, Llama-3-8B, 32768 keys:
-- 13.5 -> 10.9 ms (with the rows prefetch unrolled, lib/rows); 4 ahead and 32
-- ahead were slower than 8, one or two lines a page slower than four, and the
-- rows prefetch is still needed (the trigger alone: 18.2-18.4 ms).  The
-- blocked kernel does the same a block further than its prefetch of the next
-- block, where that prefetch goes to L2 (Zen 4: Lq 2 17.6-17.8 -> 15.8-16.2
-- ms).  docs/decode.md has the figures.
M.STREAM_PAGE_AHEAD = 8
--- The page those prefetches train the hardware prefetcher on: a key's rows of
-- every kv head span several where they are longer (Gemma-2-9B, D = 256 f32:
-- 1 KiB a row, two 4 KiB pages of K and two of V a key), and each page gets
-- its own first lines: the rows of kv heads 0, PAGE_BYTES / row bytes, ...
-- (Zen 4, Gemma-2-9B Lq 1, 32768 keys: 27.4-27.8 -> 24.9-25.0 ms).
M.PAGE_BYTES = 4096
--- The streaming kernel's one-key step uses two accumulators a row in its
-- scores (half the FMA dependency chain) when K/V are stored in 16 bits:
-- that kernel is bound by its instructions, not by the cache reads, and the
-- one-key step ran about 5% faster with them (Llama-3-8B, f16 cache, 32768
-- keys: 6.7 -> 6.3-6.4 ms, before the step took two keys there;
-- the one-key step still serves the steps with score terms, one kv head, a
-- head-major cache and the last key of a split); from an f32 cache, bound by
-- the reads, they are 4% faster in cache and 1% slower from DRAM.
M.STREAM_SPLIT_DOT_DTYPES = { bf16 = true, f16 = true }
--- Keys the streaming kernel takes a step at a time (one pass over the rows'
-- Q for their scores, one over O for their V rows), by storage type and ISA:
-- with 16-bit caches the kernel is bound by its instructions, and each pass
-- over Q and O serves that many keys (Llama-3-8B, f16 cache, 32768 keys, AMD
-- Zen 5, AVX-512: 6.3 ms one key a step, 4.9 two, 11 four; AVX2 and NEON
-- take two unmeasured).  From an f32 cache one key a step keeps the read
-- order the hardware prefetcher follows (Zen 5: 7.8 ms, 10.0 two keys), but
-- where the CPU runs 512-bit instructions in halves (Zen 4) the one-key step
-- is bound by its passes over Q and O (19 ms, 14 two keys, AVX-512 and AVX2
-- alike): the x86 kernels hold both steps for f32 (STREAM_KEYS_BY_CPU) and
-- the runtime picks (attn_cpu()->decode_key_pairs); docs/decode.md.  Each ISA
-- module states its keys a step by storage type (isa.stream_keys; none: one).
M.STREAM_KEYS_BY_CPU = { f32 = true }
--- Rows whose Q and O hold more than this many bytes (half a 32 KiB L1) take
-- most of the L1 of a Zen 4 or an older Intel core: there the f32 kernels hold
-- the pair step (above: Llama-3-8B, 32 KiB, one key a step 19-22 ms, two 13.7;
-- GPT-2, 12 heads x 64, at Lq 4: 24 KiB, 11.9-12.6 and 8.2-8.3 ms; at Lq 1:
-- 6 KiB, 7.0-7.7 ms either way, so one key a step), and the 16-bit ones ask
-- for the K and V rows ahead into L2, not L1, where they would push the rows
-- out (Llama-3-8B, f16 cache, 32768 keys, Zen 4: 14.0 -> 9.4 ms).
M.STREAM_QO_L1 = 16 * 1024
--- Except over small pages (paged, pages fewer keys than a decode block:
-- p.decode.gather), where a key's rows lie at a random place of the pools
-- and the hardware prefetcher cannot run ahead of them: there the 16-bit
-- caches' rows STREAM_PREFETCH keys ahead go into L1 whatever their Q and O
-- take (Llama-3-8B, f16 cache, Lq 1, page 1: 1.14-1.27 of the contiguous
-- time against 1.50-1.64 into L2 on a lightly loaded machine; docs/decode.md,
-- "Small pages at Lq = 1").
M.STREAM_PAGED_L1_DTYPES = { bf16 = true, f16 = true }

--- The streaming decode path's running max is lazy: it moves only when a
-- score passes it by more than this (base 2), so O is seldom rescaled and
-- the weights 2^(s - m) stay at most 2^LAZY_MAX.
M.LAZY_MAX = 8

--- The backward pass's dQ partial sums: a dK/dV unit (a key tile) writes
-- dS K of each query tile it sees, and the dQ units add them up in the order
-- of the key tiles, so each score tile's products are computed once (five a
-- tile pair, not seven) and the sums do not depend on the thread count.  A kv
-- head's query tiles are taken in chunks whose partial sums fit this many
-- floats (64 MiB; at least one tile a chunk), so the buffer does not grow as
-- Lq x Lk.
M.BWD_PART_FLOATS = 16777216

--- The backward's tile where the config sets none: 64 query rows against
-- twice the forward's key tile (512 keys at D 128).  Each (query tile, key
-- tile) pair writes and reads back a partial dQ of its rows, so longer key
-- tiles halve that traffic; H 8, D 128, L 4096, one Zen 5 thread, process CPU
-- time alternated in one process under load (best of 5): causal 497 ms
-- against 597 at 96 x 256, non-causal 886 against 1037; D 64, L 1024 the same
-- (19.8 against 19.6).  Longer key tiles (1024) gained nothing more.
M.BWD_TILE_Q = 64
M.BWD_TILE_KV_TIMES = 2

--- The backward's dK/dV units (key tiles) a thread at least: a call takes as
-- many kv heads of a batch entry side by side as give each thread this many
-- (one head where its key tiles do), so that a causal pass's uneven units
-- balance and threads past a head's key tiles have work.
M.BWD_UNITS_PER_THREAD = 2

--- ALiBi slopes of the ALiBi paper for n heads (docs/config.md, "ALiBi").
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

--- The streaming decode path's block step for K/V caches of llama.cpp's
-- blocks (lib/decode_qblock): a kv head's rows take STREAM_QBLOCK_KEYS keys
-- a step (the block's scores, one softmax update, then P*V with O in
-- registers over a chunk of Dv), where the one-key step loads and stores O
-- at every key and dequantizes each V vector with its block's scale.  Taken
-- on the ISAs that spell a block's codes as f32 in one vector (x86:
-- isa.block_codes_i8 and _u4, lanes dividing 32) where the unit has steps
-- without score terms; the others keep the one-key step.  Each kv head asks
-- for its rows STREAM_QBLOCK_AHEAD keys on, into L1, after its step (L2:
-- 34.2 ms against 21.5 in L1, 32 keys a block 36.5, two blocks ahead 26.9;
-- Zen 5, loaded).  docs/benchmarks.md ("The streaming block step") has the
-- figures.
M.STREAM_QBLOCK_KEYS = 16
M.STREAM_QBLOCK_AHEAD = 16

--- The block step of a streaming plan st (nil where it is not taken): its
-- keys, keys ahead, and by rows a kv head the vectors of Dv a P*V chunk
-- holds in registers (half the registers in accumulators; a chunk whole
-- blocks, or a whole part of one).
function M.stream_qblock(plan, v, st)
  local isa, L = v.isa, v.lanes
  if not (plan.kv_block and isa.block_codes_i8 and isa.block_codes_u4 and L >= 8 and 32 % L == 0) then return nil end
  -- score terms on every key (ALiBi, a relative bias, a mask): the unit has no step without them
  if plan.alibi or plan.rel_bias or plan.mask ~= "none" then return nil end
  local nvec, acc = math.floor(plan.Dv / L), math.floor(isa.regs / 2)
  local qb = { keys = M.STREAM_QBLOCK_KEYS, ahead = M.STREAM_QBLOCK_AHEAD, vectors = {} }
  -- matmul = "int8" where the ISA scores the step's keys along the lanes
  -- (isa.iqkeys): the scores, weights and softmax sums a row's vectors
  qb.keys_in_lanes = v.i8 and isa.iqkeys ~= nil and qb.keys % L == 0 or nil
  for _, rows in ipairs(st.rows) do
    local best = 1
    for cv = 1, nvec do
      local w = cv * L
      if nvec % cv == 0 and cv * rows <= acc and (w % 32 == 0 or 32 % w == 0) then best = cv end
    end
    qb.vectors[rows] = best
  end
  return qb
end

--- The streaming decode path of a variant, or nil where the ISA has no
-- four-float registers or the rows do not fit.
local function stream_plan(plan, v)
  local isa = v.isa
  -- streaming decode: query rows per call it serves, and the rows per kv
  -- head (group * Lq, at most 4) each needs a step kernel for
  -- (not with weights: the blocked path writes them, the streaming one does not)
  -- (nor with dropout: only the blocked path draws the mask)
  -- (nor with entropy: the blocked path carries the rows' sums of p s)
  if isa.q4 and plan.decode.max_q > 0 and plan.group <= 4 and not plan.weights and not plan.dropout
      and not plan.entropy then
    local bytes_per_q = plan.Hq * (v.dqs + v.dvp) * 4 -- Q and O of one query row of every head
    local max_q = math.min(math.floor(4 / plan.group), math.floor(M.STREAM_L1 / bytes_per_q), plan.decode.max_q)
    if max_q >= 1 then
      local st = { max_q = max_q, rows = {} }
      -- several keys a step where the kernel takes its step without score
      -- terms (no ALiBi, no mask tensor) over more than one kv head
      local keys = 1
      if not (plan.alibi or plan.rel_bias or plan.mask ~= "none") and plan.Hkv > 1 and isa.stream_keys then
        keys = isa.stream_keys[plan.dtype.kv] or 1
      end
      -- per rows a kv head: keys a step, whether the runtime chooses them (only
      -- where keys > 1: never with score terms or one kv head), and whether the
      -- rows ahead are asked for into L2 (else L1)
      st.nkeys, st.by_cpu, st.l2 = {}, {}, {}
      for lq = 1, max_q do
        local rows, nk = plan.group * lq, keys
        local big = bytes_per_q * lq > M.STREAM_QO_L1
        local by_cpu = nk > 1 and M.STREAM_KEYS_BY_CPU[plan.dtype.kv] == true
        if by_cpu and not big then
          nk, by_cpu = 1, false -- few rows: the passes over Q and O are short
        end
        st.rows[lq], st.nkeys[rows], st.by_cpu[rows] = rows, nk, by_cpu
        st.l2[rows] = plan.dtype.kv == "f32" or big
        if plan.decode.gather and M.STREAM_PAGED_L1_DTYPES[plan.dtype.kv] then st.l2[rows] = false end
      end
      st.qblock = M.stream_qblock(plan, v, st)
      if st.qblock then -- its block step takes the place of the several-key step
        for rows, by_cpu in pairs(st.by_cpu) do
          if not by_cpu then st.nkeys[rows] = 1 end
        end
      end
      return st
    end
  end
  return nil
end

--- The attn_spec initializer of a plan: { field, C value } in order.  The
-- top-left alignment, the chunks and the sparse pattern are given only when
-- set (a designated initializer leaves them 0: bottom-right, no chunks, no
-- sparse pattern).
local MASK_ENUM = { none = "ATTN_MASK_NONE", bool = "ATTN_MASK_BOOL", bias = "ATTN_MASK_BIAS" }
function M.spec_fields(p)
  local function flag(b) return b and "1" or "0" end
  local f = {
    { "family", "ATTN_FAMILY_SDPA" }, { "name", ('"%s"'):format(p.name) },
    { "heads_q", p.Hq }, { "heads_kv", p.Hkv }, { "head_dim", p.D }, { "head_dim_v", p.Dv },
    { "causal", flag(p.causal) }, { "window_left", p.window_left }, { "window_right", p.window_right },
    { "global_tokens", p.global_tokens }, { "padding", flag(p.padding) }, { "mask", MASK_ENUM[p.mask] },
    { "scale", util.c_float(p.scale) }, { "softcap", p.softcap and util.c_float(p.softcap) or "0.0f" },
    { "alibi", flag(p.alibi) }, { "dtype_q", common.DTYPE_ENUM[p.dtype.q] },
    { "dtype_kv", common.DTYPE_ENUM[p.dtype.kv] },
    { "dtype_o", common.DTYPE_ENUM[p.dtype.o] },
    -- matmul = "int8": Q.K's operands are q8_0 blocks (the spec's product type)
    { "matmul", p.matmul == "int8" and "ATTN_DTYPE_Q8_0" or common.DTYPE_ENUM[p.matmul] },
    { "tile_q", p.tile.q }, { "tile_kv", p.tile.kv },
  }
  if p.weights then f[#f + 1] = { "weights", "1" } end -- only when set: descriptors without it stay as they were
  if p.dropout then f[#f + 1] = { "dropout", "1" } end
  if p.sinks then f[#f + 1] = { "sinks", "1" } end
  if p.temperature then
    f[#f + 1] = { "temperature_scale", p.c.temp_scale }
    f[#f + 1] = { "temperature_floor", p.c.temp_floor }
  end
  local rb = p.rel_bias
  if rb then -- after alibi
    for i = #f, 1, -1 do
      if f[i][1] == "alibi" then
        table.insert(f, i + 1, { "rel_bias", rb.kind == "t5" and "ATTN_REL_T5" or "ATTN_REL_CLIPPED" })
        table.insert(f, i + 2, { "rel_buckets", p.rel_rows })
        table.insert(f, i + 3, { "rel_max_distance", rb.max_distance })
        if rb.kind == "t5" then table.insert(f, i + 4, { "rel_bidirectional", flag(rb.bidirectional) }) end
      end
    end
  end
  if p.entropy then f[#f + 1] = { "entropy", "1" } end
  if p.paged then
    f[#f + 1] = { "page", p.paged.page }
    f[#f + 1] = { "page_order", p.paged.order == "HND" and "ATTN_PAGE_HND" or "ATTN_PAGE_NHD" }
  end
  if p.shared_kv then f[#f + 1] = { "shared_kv", "1" } end
  if p.rope then
    f[#f + 1] = { "rope_style", p.rope.style == "gptj" and "ATTN_ROPE_GPTJ" or "ATTN_ROPE_NEOX" }
    f[#f + 1] = { "rope_dim", p.rope.dim }
    if p.rope.table then
      f[#f + 1] = { "rope_table", "1" }
    else
      f[#f + 1] = { "rope_inv_freq", p.rope.inv_freq_name }
    end
  end
  if p.qk_norm then
    f[#f + 1] = { "qk_norm", "1" }
    f[#f + 1] = { "qk_norm_eps", p.qk_norm.c_eps_double }
    f[#f + 1] = { "qk_norm_offset", p.qk_norm.offset }
  end
  -- after the field they follow: causal, window_right
  for i = #f, 1, -1 do
    if f[i][1] == "window_right" and p.sparse then
      local sp = p.sparse
      local period = sp.pattern == "strided" and { "sparse_stride", sp.stride } or { "sparse_block", sp.block }
      table.insert(f, i + 1, { "sparse", sp.pattern == "strided" and "ATTN_SPARSE_STRIDED" or "ATTN_SPARSE_FIXED" })
      table.insert(f, i + 2, period)
      if sp.summary then table.insert(f, i + 3, { "sparse_summary", sp.summary }) end
    end
    if f[i][1] == "window_right" and p.chunk then table.insert(f, i + 1, { "chunk", p.chunk }) end
    if f[i][1] == "causal" and p.top_left then table.insert(f, i + 1, { "top_left", "1" }) end
  end
  return f
end

--- The masks: which code paths exist, and the span fields of a row.
local function plan_masks(p, cfg)
  -- masks: which code paths exist
  local w = cfg.window
  p.causal = cfg.causal ~= false
  p.window_left = w.left
  p.window_right = w.right
  p.chunk = cfg.chunk -- keys of a chunk, or nil
  -- the Sparse Transformer pattern, or nil: { pattern = "strided", stride } or
  -- { pattern = "fixed", block, summary }; it implies causal (the schema sets it)
  p.sparse = cfg.sparse
  p.global_tokens = cfg.global_tokens
  p.has_left = w.left >= 0
  p.has_right = w.right >= 0 and not p.causal -- causal already bounds the right side at p
  -- global queries are exempt from the window, the chunks and the sparse pattern
  p.has_global = cfg.global_tokens > 0 and (p.has_left or p.has_right or p.chunk ~= nil or p.sparse ~= nil)
  -- a row's span fields, as the templates pass them (p.spans("w->%s") for
  -- the arrays, p.spans("&w->%s[r]") for row r's): lo, hi, sink_hi, and with
  -- a sparse pattern sparse_lo (its keys lie in [sparse_lo, lo)) and spos
  -- (the row's position, which its keys depend on)
  p.span_fields = { "lo", "hi", "sink_hi" }
  if p.sparse then
    p.span_fields[4] = "sparse_lo"
    p.span_fields[5] = "spos"
  end
  function p.spans(fmt)
    local t = {}
    for i, f in ipairs(p.span_fields) do t[i] = fmt:format(f) end
    return table.concat(t, ", ")
  end
  p.padding = cfg.padding
  p.mask = cfg.mask
  -- paged K/V: {page = P, order = "NHD" | "HND"}, or nil.  Key j of batch b is
  -- slot j % PAGE of page block_table[b][j / PAGE]; every read of a K or V row
  -- goes through lib/rows' k_row / v_row, and every read of a block of keys a
  -- fixed stride apart stops at a page end (the blocked decode unit's blocks,
  -- the prefill's packs of K^T row by row)
  p.paged = cfg.paged and { page = cfg.paged.page, order = cfg.paged.order }
end

--- The outputs and per-row terms beyond O and LSE, and what they leave to the
-- prefill path's sparse gathering and the spans.
local function plan_outputs(p, cfg)
  -- weights: the kernel can write P = exp(s - LSE) (args->weights): each
  -- prefill tile's final scores go into the caller's P rows, and one pass at
  -- the end of the query tile (prefill) or of the merge (decode) turns them
  -- into weights; the streaming decode path is not generated
  p.weights = cfg.weights == true
  -- dropout: after each tile's (block's) softmax, the probabilities of the
  -- keys Philox drops are set to 0 (the sum l keeps them: LSE is the
  -- softmax's); O and P are scaled by 1 / (1 - dropout_p) at the end; the
  -- streaming decode path is not generated
  p.dropout = cfg.dropout == true
  -- sinks: a logit per query head (args->sinks, natural log, not scaled)
  -- joins each row's softmax with no value row: it is added once, where a
  -- row is normalized (the prefill epilogue, the decode path's merge)
  p.sinks = cfg.sinks == true
  -- temperature {scale, floor}: query row i at position p is multiplied by
  -- 1 + scale * ln(floor((p + 1) / floor) + 1), computed in double and
  -- rounded to f32 once a row, inside qpack's scale (the template's temp())
  p.temperature = cfg.temperature
  -- shared_kv: V is the first Dv values of each K row (multi-head latent
  -- attention, absorbed): lib/rows points the V rows at the K rows, so every
  -- path reads one tensor and args->v is ignored
  p.shared_kv = cfg.shared_kv == true
  -- entropy: the kernel can write each row's entropy E = LSE - sum_j P_j s_j
  -- (args->entropy, nats): the online softmax keeps one more running sum,
  -- t = sum_j 2^(s_j - m) s_j (base 2), rescaled with m as l is; the
  -- epilogue (prefill) or the split merge (decode, the splits' mean scores
  -- combined by LSE) turns it into E; the streaming decode path is not
  -- generated
  p.entropy = cfg.entropy == true
  p.mask_ctype = ({ bool = "uint8_t", bias = "float" })[cfg.mask]
  -- the prefill path gathers a sparse pattern's keys outside each row's
  -- dense part into panels of their own (fixed: the summary keys, one panel
  -- a kv head; strided: the keys of one residue mod the stride, one panel
  -- for the rows of that residue) and computes them in a pass before the key
  -- tiles, whose rows start from that pass's partial sums; the key tiles then
  -- see only dense spans.  What is indexed by a key's position (ALiBi's
  -- distance, the mask tensors, the weights, dropout's counters) keeps the
  -- key tiles' per-key tests instead, and so does a paged cache, whose keys
  -- of one residue are not a fixed stride apart.
  p.sparse_gather = p.sparse ~= nil and not (cfg.alibi or cfg.rel_bias or cfg.mask ~= "none" or p.weights or p.dropout
    or cfg.paged)
  -- keys outside [0, Lk_b) or outside a row's span exist only with these
  p.has_spans = p.causal or p.has_left or p.has_right or p.chunk ~= nil or p.padding
end

--- The score terms in base 2 (scale, softcap, ALiBi, the relative position
-- bias) and the constants they put in the C.
local function plan_terms(p, cfg)
  -- the kernel keeps scores in base 2: everything that adds to a score is
  -- scaled by log2(e) once here, and every exp becomes an exp2
  p.scale = cfg.scale
  p.qscale = cfg.scale * common.LOG2E
  p.softcap = cfg.softcap
  p.softcap2 = cfg.softcap and cfg.softcap * common.LOG2E
  p.alibi = cfg.alibi
  if cfg.alibi then
    p.alibi_slopes = {}
    for h, s in ipairs(M.alibi_slopes(cfg.heads_q)) do p.alibi_slopes[h] = util.c_float(s * common.LOG2E) end
  end
  -- a learned relative position bias (args->rel_table [rel_rows][Hq]):
  -- { kind = "t5", buckets, max_distance, bidirectional } or { kind =
  -- "clipped", max_distance }; rel_rows is the table's rows, and for t5
  -- rel_dir the buckets of a direction and rel_exact those of exact distances
  p.rel_bias = cfg.rel_bias
  if cfg.rel_bias then
    local rb = cfg.rel_bias
    if rb.kind == "t5" then
      p.rel_rows = rb.buckets
      p.rel_dir = rb.bidirectional and math.floor(rb.buckets / 2) or rb.buckets
      p.rel_exact = math.floor(p.rel_dir / 2)
    else
      p.rel_rows = 2 * rb.max_distance + 1
    end
  end
  local c_float = util.c_float
  p.c.qscale = c_float(p.qscale)
  p.c.softcap = p.softcap2 and c_float(p.softcap2)
  p.c.inv_softcap = p.softcap2 and c_float(1 / p.softcap2)
  p.c.lazy_max = c_float(M.LAZY_MAX)
  p.c.temp_scale = p.temperature and util.c_double(p.temperature.scale)
  p.c.temp_floor = p.temperature and util.c_double(p.temperature.floor)
  p.lazy_max = M.LAZY_MAX
end

--- The inverse frequencies of a rope config, in double: theta^(-2m/dim)
-- for pair m, then the scaling (linear: / factor; llama3: Hugging Face's
-- _compute_llama3_parameters, its blend of the two between the wavelengths
-- original_max_position / high_freq_factor and / low_freq_factor).
function M.rope_inv_freq(rope)
  local half, out = math.floor(rope.dim / 2), {}
  local sc = rope.scaling
  for m = 0, half - 1 do
    local f = 1 / rope.theta ^ (2 * m / rope.dim)
    if sc and sc.type == "linear" then
      f = f / sc.factor
    elseif sc and sc.type == "llama3" then
      local orig = sc.original_max_position
      local wavelen = 2 * math.pi / f
      local low_wavelen, high_wavelen = orig / sc.low_freq_factor, orig / sc.high_freq_factor
      if wavelen > low_wavelen then
        f = f / sc.factor
      elseif wavelen >= high_wavelen then -- the medium frequencies: blended
        local smooth = (orig / wavelen - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor)
        f = (1 - smooth) * f / sc.factor + smooth * f
      end
    end
    out[m + 1] = f
  end
  return out
end

--- RoPE: query row i is rotated at its position inside qpack (after the
-- scale), by cos / sin of pos * inv_freq_m computed in double (or read from
-- the run-time table); consecutive positions step the angles by a rotation
-- in double (rows.c.tmpl's rope_at).
local function plan_rope(p, cfg)
  local r = cfg.rope
  if not r then return end
  p.rope = { style = r.style, dim = r.dim, half = math.floor(r.dim / 2), table = r.table, theta = r.theta,
    scaling = r.scaling }
  if not r.table then
    local inv = M.rope_inv_freq(r)
    local c_inv, c_cos, c_sin = {}, {}, {}
    for m, f in ipairs(inv) do
      c_inv[m], c_cos[m], c_sin[m] = util.c_double(f), util.c_double(math.cos(f)), util.c_double(math.sin(f))
    end
    p.rope.inv_freq, p.rope.c_inv_freq, p.rope.c_step_cos, p.rope.c_step_sin = inv, c_inv, c_cos, c_sin
    p.rope.inv_freq_name = naming.build(p.name, "rope_inv_freq")
  end
end

--- qk_norm: query rows (in qpack, before the scale and RoPE) and appended
-- key rows (lib/append, before RoPE) are RMS-normed over their D values
-- in f32, times (offset + w) with the caller's weights (lib/qk_norm).
local function plan_qk_norm(p, cfg)
  local n = cfg.qk_norm
  if not n then return end
  p.qk_norm = { eps = n.eps, offset = n.offset, c_eps = util.c_float(n.eps), c_eps_double = util.c_double(n.eps) }
end

--- The decode path's constants (split, blocks, the streaming kernel's
-- prefetch); opts may override the block and the chunk.
local function plan_decode(p, cfg, opts)
  -- decode path: taken when Lq <= max_q; keys split in chunks whose length
  -- depends on Lk only, never on the thread count
  p.decode = { max_q = cfg.decode_max_q, chunk = opts.decode_chunk or M.DECODE_CHUNK,
    max_splits = M.DECODE_MAX_SPLITS,
    block = opts.decode_block or M.default_decode_block(cfg),
    reason = (opts.decode_block or opts.decode_chunk) and (opts.decode_reason or "given") or nil }
  p.workspace = true -- attn_NAME_workspace_size, for the decode path's memory (families/sdpa_decode)
  p.decode.head_split = decode.HEAD_SPLIT -- below this many splits a call, a decode unit is one kv head's
  -- the blocked kernel's prefetch of its next block runs inside its score
  -- kernels (lanes, dpairs), one cache line an iteration, where every K and V
  -- row has the same whole number of lines, at least ROWS_IN_SCORES_LINES: an
  -- f32 cache, D = Dv, D a multiple of a line (docs/decode.md)
  p.decode.rows_in_scores = p.dtype.kv == "f32" and p.D == p.Dv and p.D % p.line_floats == 0
    and p.D >= M.ROWS_IN_SCORES_LINES * p.line_floats
  -- the cache lines of each of those K and V rows, as the kernels that take
  -- them count a row's lines (nil where they take none)
  p.decode.row_lines = p.decode.rows_in_scores and math.floor(p.D / p.line_floats) or nil
  local cap = math.min(p.decode.chunk, math.max(p.decode.block, M.DECODE_BLOCK))
  p.decode.blocks = {}
  for class, f in pairs(M.DECODE_BLOCK_SCALE) do
    p.decode.blocks[class] = math.min(cap, math.max(8, math.floor(p.decode.block * f / 8) * 8))
  end
  p.stream = { prefetch = M.STREAM_PREFETCH, prefetch_head_major = M.STREAM_PREFETCH_HEAD_MAJOR,
    page_ahead = M.STREAM_PAGE_AHEAD, split_dot = M.STREAM_SPLIT_DOT_DTYPES[p.dtype.kv] == true,
    -- kv heads whose rows start a key's pages (key-major layout): every page_heads-th
    page_heads = math.max(1, math.floor(M.PAGE_BYTES / (math.max(p.D, p.Dv) * common.value_bytes(p.dtype.kv)))) }
  M.plan_paged_decode(p)
end

--- Paged K/V with pages smaller than a decode block: the blocked unit splits
-- its score and P*V calls at page ends, so with small pages every call takes
-- a page's few keys (with pages of 1 key, P*V loads and stores O once a key).
-- Below GATHER_PAGE_BELOW (the heuristic block: p.decode.block), it copies
-- each block's K and V rows (through k_row / v_row, stored as they are) into
-- its scratch first, a kv head's rows of the block adjacent, and runs the
-- block's calls on the copy, whole blocks again.  (The streaming unit reads
-- the cache key by key and prefetches whole rows STREAM_PREFETCH keys ahead,
-- through the table: over pages of one key that is 2 pages ahead.  8 keys
-- ahead measured slower there, Llama-3-8B f16 cache, Lq 1, page 1, on a
-- loaded 2-core AMD EPYC: best of 3 rounds 48.7 against 22.8 ms and of 2
-- 81.1 against 50.7 ms; the 16-bit cache's prefetch goes into L1, which 8
-- keys of 8 kv heads' rows, 32 KiB, overrun.)
function M.plan_paged_decode(p)
  if not p.paged then return end
  local page = p.paged.page
  if p.decode.max_q > 0 and page < p.decode.block then
    local vals = p.kv_values or 1
    p.decode.gather = {
      keys = p.decode.blocks.many, -- a block's keys at most (DECODE_BLOCK_MANY)
      k = math.floor(p.D / vals), -- elements of a K row, and of a V row
      v = math.floor(p.Dv / vals),
      shared = p.shared_kv == true, -- V rows are K's: only K copied
      elem_bytes = common.DTYPE_BYTES[p.dtype.kv],
      reason = ("pages of %d keys, fewer than a block's %d"):format(page, p.decode.block) }
  end
end

--- The ISA variants: each one's micro-kernels, prefill chunks and decode
-- kernels, and the blocked decode schedule of those that render one.
local function plan_variants(p, cfg)
  -- why the forward function runs chunks where it does, for its comment
  p.prefill_chunk_rule = cfg.prefill_chunk and "the config's prefill_chunk"
    or ("%d MiB of K^T and V packed; %d MiB a chunk"):format(M.PREFILL_CHUNK_FROM / 1048576,
      M.PREFILL_CHUNK_BYTES / 1048576)
  p.variants = {}
  local by_name = {}
  for _, isa in ipairs(common.isas(cfg)) do
    local v = common.variant(cfg, p, isa)
    v.stream = stream_plan(p, v)
    -- the prefill's scores kernel on one vector of a panel's columns too,
    -- where a panel has several: a block of rows on a mask's edge (the causal
    -- diagonal, a window's edges, the last keys) computes only the vectors
    -- some row of it sees
    v.qk_narrow = v.qk.mr > 1 and v.qk.nr > 1
    v.prefill_chunk, v.prefill_chunk_from = M.prefill_chunk(p, v, cfg)
    -- the blocked decode path's scores at lanes/4 to lanes/2 rows a kv head
    -- (Lq = 2 of a GQA group of 4 on AVX-512) with the rows along pairs of
    -- lanes, two values of D each, where the ISA spells it: an f32 cache
    -- (one 64-bit broadcast feeds each FMA; a 16-bit pair would need a
    -- conversion too) and whole pairs of D (docs/decode.md)
    v.dpairs = isa.set2 ~= nil and p.decode.max_q > 0 and p.dtype.kv == "f32" and p.D % 2 == 0
    -- the same at up to lanes/4 rows (Lq = 1 of a group of 4 on AVX-512)
    -- on half-width vectors, where the ISA has them and the runtime picks them
    -- (attn_cpu()->decode_half_pairs: AMD Zen 4 and 5; elsewhere dot products, docs/decode.md)
    v.hpairs = v.dpairs and isa.half ~= nil
    -- and from lanes/2 to lanes rows (Lq = 4 of a group of 4 on AVX-512) in
    -- two vectors of pairs, where the ISA says so (isa.pairs_wide: AVX-512,
    -- whose lanes kernel the loads bound; AVX2 measured slower so, docs/decode.md)
    v.wpairs = v.dpairs and isa.pairs_wide == true
    -- those rows' P*V calls ask for half of the next block (the scores the
    -- other half), one line an iteration inside the P*V kernels, which take
    -- the rows to prefetch where this is set (docs/decode.md)
    v.pv_prefetch = v.wpairs and p.decode.rows_in_scores
    -- and so do the rows in panels (more than a vector a kv head): the
    -- scores' half inside an instance of the panel kernel that prefetches
    -- (qkpf, a line every other d: unrolled by an even count, which only the
    -- decode path calls), the P*V half inside P*V (docs/decode.md)
    v.qk_prefetch = v.pv_prefetch and v.qk.mr > 1 and v.qk.unroll % 2 == 0
    -- the rows a qkpf call asks for (D / 2 lines), which the decode unit hands it
    v.qkpf_rows = v.qk_prefetch and math.floor(p.D / (2 * p.decode.row_lines)) or nil
    p.variants[#p.variants + 1] = v
    by_name[isa.name] = v
  end
  -- a variant of pair dot products (avx512bf16) takes the decode path of
  -- the variant of its base ISA (avx512) when the file has it: that path
  -- does no pair products, and the same code twice would only cost compile
  -- time (v.decode_by: the variant whose decode path it calls)
  for _, v in ipairs(p.variants) do
    local base = v.dp and v.isa.base and by_name[v.isa.base]
    if base and p.decode.max_q > 0 then
      v.decode_by, v.stream, v.mk = base, nil, {}
      v.dpairs, v.hpairs, v.wpairs, v.pv_prefetch, v.qk_prefetch, v.qkpf_rows = false, false, false, false, false, nil
    end
  end
  -- a base variant whose decode path a variant of pair dot products calls
  -- (avx512 for avx512bf16) gets the class of bf16 pair products for many
  -- rows a kv head (planner/sdpa_decode.lua, dp), which runs when that
  -- variant calls it: scores on the K rows in place (D even), each panel of
  -- Q^T packed in pairs (the pair variant's panel as wide as the base's),
  -- P and V in pairs of keys, P transposed lanes x lanes pairs at a time
  -- (v.transpose_pack); not on paged caches (a call's keys one stride apart);
  -- only where a call can have a panel of rows a kv head (group * max_q), and
  -- a block of the panels holds 32 keys (the class's blocks are whole 32s).
  -- The pair variant's code comes first in the file (its helpers and
  -- micro-kernels precede the base's decode unit).
  local at = {}
  for i, v in ipairs(p.variants) do at[v] = i end
  for _, v in ipairs(p.variants) do
    local base = v.decode_by
    if base and at[v] < at[base] and p.D % 2 == 0 and not p.paged and v.transpose_pack
      and v.qk.nc == base.qk.nc and v.dvp == base.dvp and v.qk.mr > 1 and p.group * p.decode.max_q >= base.qk.nc
      and p.decode.blocks.many >= 32 then
      base.dp_from = v
    end
  end
  -- the blocked decode kernel's schedule of each variant that renders one
  -- (planner/sdpa_decode.lua)
  for _, v in ipairs(p.variants) do
    if p.decode.max_q > 0 and not v.decode_by then v.dsched = decode.schedule(p, v) end
  end
  -- the prefill path's constants and memory of each variant (planner/sdpa_prefill.lua)
  for i, v in ipairs(p.variants) do v.prefill = prefill.plan(p, v, i) end
end

--- The backward pass (backward = true): its names, the storage of its
-- gradients, its tiles and its spec fields.  Without it, p.backward is
-- false and nothing else is planned.
local function plan_backward(p, cfg)
  p.backward = cfg.backward == true
  if not p.backward then return end
  -- gradients: f32, or (grad_dtype = "storage") dQ in Q's type, dK and dV in K/V's
  local storage = cfg.grad_dtype == "storage"
  p.grad = { q = storage and p.dtype.q or "f32", kv = storage and p.dtype.kv or "f32" }
  p.grad_ctype = { q = common.CTYPE[p.grad.q], kv = common.CTYPE[p.grad.kv] }
  p.grad_same = p.grad.q == p.grad.kv
  p.bwd_entry = naming.build(p.name, "bwd")
  p.bwd_kernel = naming.build(p.name, "bwd_kernel")
  -- the backward's tiles: a tile set in the config (the tests' small ones)
  -- as given, else M.BWD_TILE_Q rows against twice the forward's keys
  p.bwd_tile = type(cfg.tile) == "table" and { q = p.tile.q, kv = p.tile.kv }
    or { q = M.BWD_TILE_Q, kv = M.BWD_TILE_KV_TIMES * p.tile.kv }
  p.bwd_part_floats = M.BWD_PART_FLOATS
  p.bwd_units_per_thread = M.BWD_UNITS_PER_THREAD
  p.c.bwd_log2e = util.c_float(common.LOG2E)
  p.c.bwd_scale = util.c_float(p.scale)
  for _, v in ipairs(p.variants) do
    v.bwd_fn = v.N("bwd")
    -- the products on the forward's micro-kernels (lib/qk for S = Q K^T and
    -- dP = dO V^T on K^T and V^T panels of qk.nc keys, lib/pv for dV, dK and
    -- dQ with P or dS read along its rows or down its columns): where one
    -- instance of each serves both head dims (D = Dv) on a vector ISA
    -- without pair products; else the tile's own register-blocked bwd_mm
    v.bwd_lib = v.lanes > 1 and not v.dp and p.D == p.Dv
  end
  p.spec_fields[#p.spec_fields + 1] = { "backward", "1" }
  p.spec_fields[#p.spec_fields + 1] = { "dtype_grad_q", common.DTYPE_ENUM[p.grad.q] }
  p.spec_fields[#p.spec_fields + 1] = { "dtype_grad_kv", common.DTYPE_ENUM[p.grad.kv] }
end

--- Turns a normalized sdpa config into the plan.  Besides the common
-- options, `opts.decode_block` and `opts.decode_chunk` override the decode
-- path's constants, and `opts.decode_reason` says why.
function M.plan(cfg, opts)
  opts = opts or {}
  local p = common.common(cfg, opts)
  p.D = cfg.head_dim
  p.Dv = cfg.head_dim_v
  p.Hq = cfg.heads_q
  p.Hkv = cfg.heads_kv
  p.group = math.floor(cfg.heads_q / cfg.heads_kv) -- exact; floor keeps it an integer on Lua 5.3+

  common.positions(p, cfg) -- p.top_left, p.pos(i, lk, lq)
  plan_masks(p, cfg)
  plan_outputs(p, cfg)
  plan_terms(p, cfg)
  plan_rope(p, cfg)
  plan_qk_norm(p, cfg)
  plan_decode(p, cfg, opts)
  plan_variants(p, cfg)

  -- FLOPs per full tile, for the cost comment: scores and P*V
  p.tile_flops = 2 * p.tile.q * p.tile.kv * (p.D + p.Dv)
  p.spec_fields = M.spec_fields(p)
  plan_backward(p, cfg)
  p.append_entry = naming.build(p.name, "append") -- lib/append's store alone (the bench's --append)
  return p
end

return M
