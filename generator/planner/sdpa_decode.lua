--- The blocked decode kernel's schedule, as plain data (planner/sdpa.lua
-- calls it for each variant that renders a decode path).
--
-- A decode unit (a batch, a split of the cache) has rows = GROUP * Lq
-- query rows a kv head, known only at run time.  The schedule lists the row
-- classes the unit chooses among by that count, in the order it tests them:
-- for each, its condition (a C expression on gl, the rows a kv head, and
-- for some a runtime function of the CPU), how a kv head's rows are padded,
-- the kernel that computes its scores and the one for P*V, the keys of a
-- block where the next block's prefetch goes to L2, and which of its kernels
-- take the next block's rows to prefetch.  Every number the unit's C tests
-- or pads to is one of the schedule's named constants (consts: name, value,
-- what it is), which the template declares at the top of the unit; the C
-- expressions here spell them by name.  So are the strides and steps of the
-- streaming units (stream_consts, by their rows a kv head), which
-- families/sdpa_decode_stream declares at the top of each of its functions.
-- The template renders this table and decides nothing.
local M = {}

--- Below this many splits of the cache in a call (all batches together), a
-- blocked decode unit takes one kv head, not all of them: a short cache has
-- one split a sequence (DECODE_CHUNK keys), which alone would keep one thread
-- busy.  Its rows' arithmetic is the same either way (each row's scores,
-- softmax and P*V are its own), so the output does not depend on the choice;
-- the choice depends on the shapes alone, never on the thread count.  Up to
-- this many splits the per-unit work (packing, setup, its merge) stays small
-- against a split's keys.
M.HEAD_SPLIT = 8

--- Keys a call of the lanes and pairs score kernels takes (their unroll).
M.SCORE_KEYS = 8
--- A kv head's rows scored by dot products are padded to a multiple of this
-- (the dot kernel's rows, lib/dot: 4 x 2).
M.DOT_ROWS = 4
--- Keys of a block of the class of bf16 pair products (sd.dp): its P*V
-- loads and stores a kv head's rows of O and packs the block's V rows once
-- a block, so the longer the block the less that costs against the products
-- (DeepSeek-V3's decode at Lq = 1 against 32768 keys on the 2-core Zen 5 VM,
-- loaded: 0.69-0.74 of the bf16 dot peak with blocks of 64 keys, 0.78-0.99
-- with 128 to 512).  A call takes fewer (whole 32s) where the scores of a
-- block of DECODE_BLOCK_MANY keys of the unit's most rows would not hold
-- its rows' (S^T does not grow: the decode scratch stays under glibc's
-- largest mmap threshold, 32 MiB, with its splits' outputs at Lq = 2).
M.DP_BLOCK = 256

--- lcm(n, 4): the padding of the whole unit's rows, whole panels and whole
-- dot-product groups both.
local function lcm4(n)
  return n % 4 == 0 and n or math.floor(n * 4 / (n % 2 == 0 and 2 or 1))
end

--- The named constants of a schedule, { name, value, comment } in order.
local function constants(p, v, s)
  local c = {
    { "ROWS_VEC", s.vec, "f32 lanes of a vector: a kv head's rows in the lanes kernel at most (isa.lanes)" },
    { "ROWS_HALF", s.half, "half a vector: the pairs kernel's rows, two values of D a row" },
    { "ROWS_QUARTER", s.quarter, "a quarter vector: the half-width pairs kernel's rows" },
    { "ROWS_PANEL", s.panel, "rows of a packed Q^T panel (the scores kernel's columns, v.qk.nc)" },
    { "ROWS_DOT", M.DOT_ROWS, "a kv head's rows scored by dot products are padded to this many" },
    { "Q_STRIDE", v.dqs, "floats of a packed Q row (D in whole vectors)" },
    { "O_STRIDE", v.dvp, "floats of an O row (Dv in whole vectors)" },
    { "SCORE_KEYS", M.SCORE_KEYS, "keys a call of the lanes and pairs score kernels takes" },
  }
  if s.pv_even then
    c[#c + 1] = { "PV_WIDEST", s.pv_widest, "rows of the widest P*V kernel (v.pv_rows[1])" }
  end
  if v.qk.mr > 1 then
    c[#c + 1] = { "QK_ROWS", v.qk.mr, "keys a call of the panels' scores kernel takes (its rows, v.qk.mr)" }
  end
  if s.panel_pf then
    c[#c + 1] = { "QKPF_ROWS", v.qkpf_rows,
      "rows of the next block a call of the prefetching panel kernel asks for (D / 2 lines)" }
  end
  if s.pv_pf then
    c[#c + 1] = { "PV_CHUNKS", s.pv_chunks, "chunks of D of the P*V kernels at most (a line of the next block each)" }
    for _, l in ipairs(s.pv_levels) do
      if l.rows_name then
        c[#c + 1] = { l.rows_name, l.from, "rows a P*V call takes from which its kernel has " .. l.name }
      end
      c[#c + 1] = { l.name, l.n, ("chunks of D of the P*V kernels of %s rows"):format(l.what) }
    end
  end
  if s.dp then
    c[#c + 1] = { "DP_ROWS", s.dp.rows, "rows a kv head from which the pair variant's calls take the dp class" }
    c[#c + 1] = { "DP_BLOCK", s.dp.block, "keys of a block of the dp class (at most)" }
    c[#c + 1] = { "S_ROWS", s.unit_rows_padded, "rows of S^T a key: the unit's most, padded" }
    c[#c + 1] = { "DP_KEYS", s.dp.keys, "keys a call of the dp class's scores kernel takes (qkdp's rows)" }
    c[#c + 1] = { "DP_PAIRS", s.dp.pairs, "bf16 pairs of D in a packed Q^T panel row (D / 2)" }
    c[#c + 1] = { "DP_PV_ROWS", s.dp.pv_rows[1], "rows a call of the dp class's P*V kernel takes (pvdp's widest)" }
    c[#c + 1] = { "DP_KEY_BLOCK", s.dp.key_block,
      "keys a row of the dp class's packed P rounds up to (its blocks of pairs: twice the pair variant's lanes)" }
    c[#c + 1] = { "DP_V_STRIDE", s.dp.v_stride, "bf16 pairs of a row of the block's packed V (Dv in whole vectors)" }
  end
  if s.row_lines then
    c[#c + 1] = { "ROW_LINES", s.row_lines, "cache lines of each K and V row (the kernels that prefetch count them)" }
    c[#c + 1] = { "LINE_FLOATS", p.line_floats, "elements of a K/V row in a cache line" }
  end
  return c
end

--- The chunks of D of the P*V kernels, by the rows a call takes (variant
-- v's widths v.pv_rows, widest first): the most, the levels (each: the
-- fewest rows from, the chunks, its constants' names), and `take`'s C
-- expression of them.  The widest kernels' level is WIDE, the narrowest's
-- NARROW, any between MID1, MID2...; one level alone: PV_CHUNKS.
local function pv_chunk_levels(v)
  local function nch(mr) return #v.pv_of(mr).chunks end
  local levels, most = {}, 0
  for idx, mr in ipairs(v.pv_rows) do
    most = math.max(most, nch(mr))
    local nxt = v.pv_rows[idx + 1]
    if not nxt or nch(nxt) ~= nch(mr) then levels[#levels + 1] = { from = mr, n = nch(mr) } end
  end
  if #levels == 1 then return most, {}, "PV_CHUNKS" end
  local expr = ""
  for i, l in ipairs(levels) do
    local tag = i == 1 and "WIDE" or i == #levels and "NARROW" or ("MID%d"):format(i - 1)
    l.name = ("PV_%s_CHUNKS"):format(tag)
    l.what = i == 1 and "PV_WIDE_ROWS or more" or i == #levels and ("fewer than " .. levels[i - 1].rows_name)
      or ("PV_%s_ROWS to %s - 1"):format(tag, levels[i - 1].rows_name)
    if i < #levels then
      l.rows_name = ("PV_%s_ROWS"):format(tag)
      expr = expr .. ("take >= %s ? %s : "):format(l.rows_name, l.name)
    else
      expr = expr .. l.name
    end
  end
  return most, levels, expr
end

--- The named constants of variant v's streaming unit of R rows a kv head
-- (families/sdpa_decode_stream; v.stream: nkeys, the keys of its steps),
-- { name, value, comment } in order.
local function stream_constants(v, R)
  local c = {
    { "HEAD_ROWS", R, "query rows a kv head (GROUP * Lq), a lane of the four-float registers each" },
    { "Q_STRIDE", v.dqs, "floats of a packed Q row (D in whole vectors)" },
    { "O_STRIDE", v.dvp, "floats of a row of O (Dv in whole vectors)" },
    { "HEAD_Q", R * v.dqs, "floats of a kv head's packed Q rows (HEAD_ROWS * Q_STRIDE)" },
    { "HEAD_O", R * v.dvp, "floats of a kv head's rows of O (HEAD_ROWS * O_STRIDE)" },
    { "HEAD_STATE", 4, "floats of a kv head's running maxima, and of its sums: a four-float register" },
  }
  if v.stream.nkeys[R] > 1 then
    c[#c + 1] = { "STEP_KEYS", v.stream.nkeys[R], "keys a step of the several-key steps (lib/dot's sqk and spvk)" }
  end
  return c
end

--- The row classes, in the order the unit tests them.  Each: name (the C flag
-- that holds it), cond (a C expression, or "0" where the variant has no such
-- class), pad (the padding of a kv head's rows, a C expression), scores and
-- pv (which kernels), block_l2 (the block's constant where the prefetch goes
-- to L2), and the prefetch plan: scores_pf (the score calls take the next
-- block's first half), pv_pf (the P*V calls take its second half),
-- key_starts ("spread": a few after each score call, "burst": all at once,
-- "none": not asked for).
local function classes(s)
  local t = {}
  if s.dp then -- first: its rows are a subset of the panels' (gl >= DP_ROWS)
    t[#t + 1] = { name = "dp", cond = "w->dp && gl >= DP_ROWS",
      pad = "(gl + (ROWS_PANEL - 1)) / ROWS_PANEL * ROWS_PANEL",
      scores = "qkdp on Q^T panels in bf16 pairs", pv = "pvdp on P and V in bf16 pairs of keys",
      block_l2 = "DECODE_BLOCK_ONE (one panel), DECODE_BLOCK_MANY", scores_pf = false, pv_pf = false,
      key_starts = "burst", within = "panel" }
  end
  t[#t + 1] = { name = "lanes", cond = s.lanes and "gl > ROWS_HALF && gl <= ROWS_VEC" or "0", pad = "ROWS_VEC",
    scores = s.wpairs and "dpairs (two vectors)" or "lanes", pv = "pv, widest first",
    block_l2 = s.wpairs and "DECODE_BLOCK_ONE" or "DECODE_BLOCK", scores_pf = s.row_lines ~= nil and s.lanes,
    pv_pf = s.pv_pf and true or false, key_starts = s.row_lines and s.lanes and "spread" or "burst" }
  if s.hpairs then
    t[#t + 1] = { name = "hpairs", cond = "gl <= ROWS_QUARTER && attn_cpu()->decode_half_pairs", pad = "ROWS_QUARTER",
      scores = "hpairs", pv = "pv, widest first", block_l2 = "DECODE_BLOCK_FEW", scores_pf = s.row_lines ~= nil,
      pv_pf = false, key_starts = s.row_lines and "spread" or "burst", within = "pairs" }
  end
  local pairs_cond = s.pairs and "gl > ROWS_QUARTER && gl <= ROWS_HALF" or "0"
  if s.hpairs then pairs_cond = "hpairs || (" .. pairs_cond .. ")" end
  t[#t + 1] = { name = "pairs", cond = pairs_cond, pad = "ROWS_HALF", scores = "dpairs", pv = "pv, widest first",
    block_l2 = "DECODE_BLOCK_FEW", scores_pf = s.row_lines ~= nil and s.pairs, pv_pf = false,
    key_starts = s.row_lines and s.pairs and "spread" or "burst" }
  -- matmul = "int8": every kv head's rows are scored by the integer block
  -- dots of the dot kernel (lib/dot), whatever their number
  t[#t + 1] = { name = "dots", cond = s.i8 and "!lanes && !pairs" or "!lanes && !pairs && gl < ROWS_PANEL",
    pad = "(gl + (ROWS_DOT - 1)) / ROWS_DOT * ROWS_DOT",
    scores = "dot 4x2", pv = "pv, widest first", block_l2 = "DECODE_BLOCK_FEW", scores_pf = false, pv_pf = false,
    key_starts = "burst" }
  t[#t + 1] = { name = "panel", cond = s.i8 and "0" or "!lanes && !pairs && !dots",
    pad = "(gl + (ROWS_PANEL - 1)) / ROWS_PANEL * ROWS_PANEL",
    scores = s.panel_pf and "qkpf (prefetching panels)" or "qk panels", pv = "pv, widest first",
    block_l2 = "DECODE_BLOCK_ONE (one panel), DECODE_BLOCK_MANY", scores_pf = s.panel_pf, pv_pf = s.panel_pf,
    key_starts = s.panel_pf and "none" or "burst" }
  return t
end

--- The C expressions the unit computes its shape from (see classes).
local function shape(s)
  local pairs_pad = s.hpairs and "(hpairs ? ROWS_QUARTER : ROWS_HALF)" or "ROWS_HALF"
  return {
    -- a kv head's rows, padded
    glp = ("lanes ? ROWS_VEC : pairs ? %s : dots ? (gl + (ROWS_DOT - 1)) / ROWS_DOT * ROWS_DOT"
      .. " : (gl + (ROWS_PANEL - 1)) / ROWS_PANEL * ROWS_PANEL"):format(pairs_pad),
    -- the unit's rows, padded (the classes below a vector a kv head: once, to whole vectors)
    rp = "dots || pairs ? (HKV * glp + (ROWS_VEC - 1)) / ROWS_VEC * ROWS_VEC : HKV * glp",
    -- keys a block: where the prefetch goes to L2, more the more work a key has
    bk = ("pf != ATTN_PREFETCH_L2%s ? DECODE_BLOCK : %sglp == ROWS_PANEL ? DECODE_BLOCK_ONE\n"
      .. "            : pairs || dots ? DECODE_BLOCK_FEW : DECODE_BLOCK_MANY"):format(s.block_one and "" or " || lanes",
      s.block_one and "lanes || " or ""),
    -- the rows of a kv head a P*V call takes: the widest kernel that fits the
    -- rows left, or two even halves (see pv_even)
    take = s.pv_even
      and "(gl > 2 * PV_WIDEST || even) && left > PV_WIDEST && left < 2 * PV_WIDEST ? (left + 1) / 2 : left" or nil,
    pv_chunks = s.pv_chunks_of,
  }
end

--- The schedule of variant v of plan p (p.decode set, v renders its own
-- decode path).
function M.schedule(p, v)
  local L = v.lanes
  local s = { vec = L, half = math.floor(L / 2), quarter = math.floor(L / 4), panel = v.qk.nc,
    score_keys = M.SCORE_KEYS }
  -- one vector of rows a kv head (more than half) has its own class where
  -- a vector holds at least 4 lanes and fewer rows than a panel
  s.lanes = L >= 4 and L < s.panel and not v.i8
  s.i8 = v.i8
  s.pairs, s.hpairs = v.dpairs, v.hpairs
  s.wpairs = s.lanes and v.wpairs
  -- one vector of rows takes DECODE_BLOCK_ONE in pairs of D, DECODE_BLOCK in the lanes kernel
  s.block_one = v.wpairs
  s.row_lines = p.decode.row_lines -- lines of a K/V row, where the score kernels prefetch
  s.pv_pf = v.pv_prefetch and s.row_lines -- P*V calls prefetch (one vector of rows in pairs of D)
  s.panel_pf = s.pv_pf and v.qk_prefetch or false -- and the panels (qkpf and their P*V calls)
  -- the classes whose score calls also ask for the key starts a block
  -- further, a few after each call (their kernels take the next block's rows)
  local spread = {}
  if s.row_lines and s.lanes then spread[#spread + 1] = "lanes" end
  if s.row_lines and (s.pairs or s.hpairs) then spread[#spread + 1] = "pairs" end
  s.spread = #spread > 0 and table.concat(spread, " || ") or false
  -- P*V: where the kernels count down from the widest one by one, the last
  -- rows under two widths go in two even halves past two widths a kv head,
  -- or where the runtime says so (attn_cpu()->decode_even_rows)
  s.pv_widest = v.pv_rows[1]
  s.pv_even = #v.pv_rows == v.pv_rows[1]
  -- the rows of a unit: every kv head's padded to whole panels or to 4
  s.rows_max = p.group * p.decode.max_q -- rows of one kv head
  s.rows_pad = lcm4(s.panel)
  s.rows_padded = math.ceil(s.rows_max / s.rows_pad) * s.rows_pad
  s.unit_rows = p.Hq * p.decode.max_q
  s.unit_rows_padded = p.Hkv * s.rows_padded
  s.stream_rows = v.stream and p.Hq * v.stream.max_q or 0
  -- where the P*V kernels take the next block's rows: the chunks of D of the
  -- kernel that `take` rows call (a line of them an iteration each), as a C
  -- expression on named constants ("take >= PV_WIDE_ROWS ? PV_WIDE_CHUNKS :
  -- PV_NARROW_CHUNKS"), and the most of them
  if s.pv_pf then
    s.pv_chunks, s.pv_levels, s.pv_chunks_of = pv_chunk_levels(v)
  end
  -- the class of bf16 pair products (planner/sdpa.lua sets v.dp_from, the
  -- variant of pair dot products whose calls take it): a kv head's rows in
  -- panels, from one panel on, scored by that variant's qkdp (DP_KEYS keys
  -- a call, their pairs broadcast against a panel of Q^T pairs) and
  -- multiplied by its pvdp (P rounded to bf16, V packed a block at a time)
  if v.dp_from then
    local dv = v.dp_from
    s.dp = { v = dv, rows = s.panel, block = math.min(M.DP_BLOCK, p.decode.chunk), keys = dv.qk.mr,
      pairs = dv.dp_pairs, pv_rows = dv.prefill_pv_rows, key_block = 2 * dv.lanes, v_stride = dv.dvp,
      qk = { dv.qkdp_fn(dv.qk.mr), dv.qkdp_fn(1) }, pv = {} }
    for i, mr in ipairs(dv.prefill_pv_rows) do s.dp.pv[i] = dv.pvdp_fn(mr) end
  end
  s.consts = constants(p, v, s)
  if v.stream then -- the streaming units' constants, by their rows a kv head
    s.stream_consts = {}
    for _, R in ipairs(v.stream.rows) do s.stream_consts[R] = stream_constants(v, R) end
  end
  s.classes = classes(s)
  s.c = shape(s)
  s.scratch_bytes = M.scratch_bytes(p, v, s)
  return s
end

--- Bytes of a thread's decode scratch (the variant's dscratch struct in
-- families/sdpa_decode: its float arrays, then its int64 arrays), rounded up to
-- whole ATTN_ALIGN (64) bytes; the caller's workspace holds one a thread.  The
-- template checks the struct fits (a negative array size where it does not).
function M.scratch_bytes(p, v, s)
  local rp, floats = s.unit_rows_padded, 0
  if v.stream then floats = floats + s.stream_rows * (v.dqs + v.dvp) + 2 * p.Hkv * 4 end
  floats = floats + rp * p.D + rp * v.dqs + p.decode.blocks.many * rp + rp * v.dvp + 3 * rp
  if p.entropy then floats = floats + rp end
  if p.alibi then floats = floats + 2 * rp end
  if s.dp then -- the dp class's P and V of a block in bf16 pairs, and the flag (its Q^T pairs go in qt)
    floats = floats + math.ceil((p.decode.blocks.many * rp + s.dp.block * v.dvp) / 2) + 1
  end
  local ints = 5 * rp + 3
  if p.sparse then ints = ints + 2 * rp end
  local bytes = math.ceil(floats * 4 / 8) * 8 + ints * 8
  local g = p.decode.gather
  if g then -- a block's K and V rows of every kv head (paged, small pages), first, on whole lines each
    local per = g.keys * p.Hkv * g.elem_bytes
    bytes = bytes + math.ceil(per * g.k / 64) * 64 + (g.shared and 0 or math.ceil(per * g.v / 64) * 64)
  end
  return math.ceil(bytes / 64) * 64
end

--- The schedule as lines of text (for the planner spec and a reader).
function M.describe(s)
  local out = {}
  for _, k in ipairs(s.consts) do out[#out + 1] = ("const %s = %s"):format(k[1], tostring(k[2])) end
  for _, cl in ipairs(s.classes) do
    out[#out + 1] = ("class %s: if %s; pad %s; scores %s; P*V %s; L2 block %s; prefetch in scores %s, in P*V %s;"
      .. " key starts %s"):format(cl.name, cl.cond, cl.pad, cl.scores, cl.pv, cl.block_l2, tostring(cl.scores_pf),
      tostring(cl.pv_pf), cl.key_starts)
  end
  for _, k in ipairs({ "glp", "rp", "bk", "take" }) do
    if s.c[k] then out[#out + 1] = ("%s = %s"):format(k, s.c[k]:gsub("%s+", " ")) end
  end
  return out
end

return M
