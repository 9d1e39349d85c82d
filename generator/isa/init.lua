--- The ISA registry and the interface every ISA module implements.
--
-- An ISA module is a table with:
--   name, enum        "avx512", "ATTN_ISA_AVX512"
--   lanes, regs       f32 lanes per vector, vector registers available
--   qk_block, pv_block register blocking of the two micro-kernels, {mr, nr}
--                     and {mr, nvc}, measured on the hardware (the planner fits
--                     them to the tile and head dims); pv_block.late_bcast:
--                     P*V loads a chunk's V vectors first and broadcasts each
--                     row's P just before its FMAs (mr * nvc + nvc + 1
--                     registers, for ISAs with 16), instead of broadcasting
--                     every row first (mr * nvc + mr + 1)
--   pv_wide           optionally, a wider P*V blocking {mr, nvc, late_bcast}
--                     for the decode path's rows past pv_block.mr (it reads V
--                     rows in place, from L2, once a call: fewer, wider calls)
--   classic_block     register blocking of the classic families' loops
--                     (planner/classic.lua): {mr, nb} dot products of MR
--                     rows by NB rows, KS keys a step of the tanh scores,
--                     CH vectors of a context row summed at a time; MR, NB
--                     and KS divide 4 (a block of keys is a multiple of 4)
--   vec               C type of a vector
--   arch_guard        C preprocessor condition for the architecture, or nil
--   include           intrinsics header, or nil
--   target            __attribute__((target(...))) string, or nil
-- and functions that return C expressions (strings):
--   zero() set1(x) load(p) store(p, v) loadn(p, n) storen(p, v, n)
--   add sub mul div fma(a, b, c) = a*b + c, max min (b wins on NaN)
--   select_lt(a, b, x, y) = (a < b) ? x : y, round pow2i iota, and
--   optionally scale(y, n) = y 2^n for integral n in one instruction (the
--   exp2 of lib/vmath then needs neither pow2i nor its clamp at 127)
--   reduce_add reduce_max, hsum4(a, b, c, d, out) (a statement: out[0..3] =
--   the sums of four vectors)
-- optionally helpers(attr) (C text of static helpers), q4 (a table: four
-- floats held in registers, for the streaming decode path; without it that
-- path is not generated: vec, zero set1 set4 load store add sub mul div fma
-- max min select_lt round pow2i as above, any_gt(a, b) nonzero when a lane of
-- a is greater than b, hsum4(a, b, c, d) the sums of four full vectors as a
-- q4, spread(v) a q4 copied into every group of four lanes of a full vector,
-- lane(s, r) lane r of each such group), transpose(src, ss,
-- dst, ds) (a statement: a lanes x lanes block transposed through registers;
-- without it K is packed by plain loops), set2(p) (the floats p[0] and p[1]
-- in every pair of lanes) with sum_pairs(x, y, s0, s1) (a statement: x and y
-- hold lanes / 2 rows' partial sums in lane pairs, row r in lanes 2r and
-- 2r + 1; each row's total of x goes to s0[r], of y to s1[r]; without them
-- the decode path's scores at lanes / 4 to lanes / 2 rows a kv head are dot
-- products; helpers(attr, {pairs = true}) defines what they call),
-- pairs_wide (true where the pairs also score one vector of rows a kv head,
-- lanes / 2 to lanes, in two vectors; without it those rows are scored along
-- the lanes, a K value broadcast for each FMA), half (a
-- table: vec, lanes, zero, load, fma, set2 and sum_pairs spelling vectors of
-- half the lanes, which the ISA's CPUs run as fast a lane where they run a
-- full vector in two halves; helpers(attr, {half_pairs = true}) defines what
-- its set2 and sum_pairs call; without it the decode path's scores at up to
-- lanes / 4 rows a kv head are always dot products), stream_keys (a table:
-- the keys the streaming decode kernel takes a step, by K/V storage type;
-- without an entry, one), stream(p, v) and stream_fence() (a
-- non-temporal store of a vector at an address aligned to it, and the fence
-- after a thread's last such store; without them outputs are stored through
-- the caches), exp2(v) and tanh(v)
-- when the ISA spells them itself (scalar uses libm); otherwise the
-- template builds them from round/pow2i/select_lt.
--
-- Storage types: templates read and write tensors through
--   load_from(dtype, p)  loadn_from(dtype, p, n)  set1_from(dtype, x)
--   store_to(dtype, p, v)  storen_to(dtype, p, v, n)
-- which widen a stored type to f32 vectors and narrow f32 vectors to it
-- (p points at elements of the storage type, x is one of them), and
-- widen_rows (below), built on them for every module.  A module
-- spells the types it supports in `storage` (dtype -> a table of those five
-- functions); f32 needs no entry (it is load/store itself).  Asking for a
-- type a module does not spell is a generator bug and raises.
local M = {}

local function naming() return require("naming") end

--- Known ISAs, best first: the dispatcher tries them in this order.
M.order = { "avx512bf16", "avx512", "avx2", "neon", "scalar" }

local REQUIRED = {
  "zero", "set1", "load", "store", "loadn", "storen", "add", "sub", "mul", "div", "fma",
  "max", "min", "select_lt", "iota", "reduce_add", "reduce_max", "hsum4",
}

local cache = {}

--- Returns the module for an ISA name, or nil and an error.
function M.get(name)
  if cache[name] then return cache[name] end
  local known = false
  for _, n in ipairs(M.order) do
    if n == name then known = true end
  end
  if not known then
    return nil, ("unknown ISA '%s' (known: %s)"):format(tostring(name), table.concat(M.order, ", "))
  end
  local isa = require("isa." .. name)
  for _, f in ipairs(REQUIRED) do
    if type(isa[f]) ~= "function" then
      error(("ISA module '%s' lacks %s()"):format(name, f))
    end
  end
  for _, t in ipairs({ "qk_block", "pv_block", "classic_block" }) do
    if type(isa[t]) ~= "table" then error(("ISA module '%s' lacks %s"):format(name, t)) end
  end
  if isa.lanes > 1 then
    for _, f in ipairs({ "round", "pow2i" }) do
      if type(isa[f]) ~= "function" and type(isa.exp2) ~= "function" then
        error(("ISA module '%s' lacks %s()"):format(name, f))
      end
    end
  end
  M.add_storage(isa)
  --- matmul = "int8": the C of the integer block dots (isa/int8.lua) of K
  -- blocks of type kv, where the module states `int8`
  if isa.int8 then
    function isa.int8_helpers(kv, attr) return require("isa.int8").helpers(isa, kv, attr) end
    function isa.idot(R, kv, nk) return require("isa.int8").name(isa, R, kv, nk) end
    --- the streaming block step's 16 keys a row in one vector (int8.keys16):
    -- the C of the helper of R rows, and its name
    if isa.int8.keys16 then
      function isa.iqkeys_helpers(R, kv, attr) return require("isa.int8").keys_helpers(isa, R, kv, attr) end
      function isa.iqkeys(R, kv) return require("isa.int8").keys_name(isa, R, kv) end
    end
  end
  cache[name] = isa
  return isa
end

--- The storage-type operations of an ISA module (see above): f32 is the
-- module's own load/store; other types come from isa.storage[dtype].
function M.add_storage(isa)
  local own = {} -- a copy: a module built from another (avx512bf16) gets block ops of its own name
  for dt, t in pairs(isa.storage or {}) do own[dt] = t end
  local function op(name, f32)
    isa[name] = function(dtype, ...)
      if dtype == "f32" then return f32(...) end
      local t = own[dtype]
      if not (t and t[name]) then
        error(("ISA module '%s' does not spell %s for storage type %s"):format(isa.name, name, tostring(dtype)), 2)
      end
      return t[name](...)
    end
  end
  --- llama.cpp's block types (K/V rows of q8_0 or q4_0 blocks): a vector
  -- of the lanes values from value e (a multiple of the lanes) of the row of
  -- blocks `row`, dequantized: a call of the variant's helper, whose C text
  -- block_helper(dtype, attr) gives.  The helper takes the block's codes as
  -- f32 (isa.block_codes_i8 and _u4, where the module spells the widening; else a
  -- plain loop) and multiplies them by the block's scale (isa.block_scale: the
  -- f16 bit pattern widened in every lane, where the module has an instruction
  -- for it; else the scalar conversion, broadcast).
  function isa.load_block(dtype, row, e)
    return ("%s(%s, %s)"):format(naming().shared("load_" .. dtype, isa.name), row, e)
  end
  function isa.block_helper(dtype, attr)
    local L, n = isa.lanes, naming()
    local codes
    if dtype == "q8_0" and isa.block_codes_i8 then
      codes = ("    const %s x = %s;\n"):format(isa.vec, isa.block_codes_i8("b->q + o"))
    elseif dtype == "q4_0" and isa.block_codes_u4 then -- values o.. in the low nibbles (o < 16) or the high ones
      codes = ("    const %s x = %s;\n"):format(isa.vec, isa.block_codes_u4("b->q + o % 16", "(o / 16) * 4"))
    else
      local code = dtype == "q8_0" and "b->q[o + i]"
        or "(o < 16 ? (b->q[o + i] & 15) : (b->q[o - 16 + i] >> 4)) - 8"
      codes = ("    float c[%d];\n    int i;\n    %s x;\n    for (i = 0; i < %d; i++) c[i] = (float)(%s);\n"
        .. "    x = %s;\n"):format(L, isa.vec, L, code, isa.load("c"))
    end
    local scale = isa.block_scale and isa.block_scale("b->d") or isa.set1(n.shared("widen_f16", "scalar") .. "(b->d)")
    return ([[

/* Values e .. e + %d of a row of %s blocks (llama.cpp's), dequantized: the codes
 * times the block's f16 scale d, exact in f32 (e a multiple of %d: one block's). */
%sstatic inline %s %s(const attn_block_%s *row, int64_t e)
{
    const attn_block_%s *b = row + e / 32;
    const int o = (int)(e %% 32);
%s    return %s;
}
]]):format(L - 1, dtype, L, attr, isa.vec, n.shared("load_" .. dtype, isa.name), dtype, dtype, codes,
      isa.mul("x", scale))
  end
  -- a block type's storage ops: p spells "row + e" (value e of the row of
  -- blocks `row`, e a multiple of the lanes) and x "row[e]"; rows are whole
  -- blocks (D a multiple of 32), so there are no tails, and K/V are never stored
  for _, dt in ipairs({ "q8_0", "q4_0" }) do
    do
      own[dt] = {
        load = function(p)
          local row, e = p:match("^([%w_]+) %+ (.+)$")
          if not row then row, e = p:match("^([%w_]+)$"), "0" end
          if not row then error(("ISA module '%s': a %s load from '%s' (not row + e)"):format(isa.name, dt, p), 3) end
          return isa.load_block(dt, row, e)
        end,
        set1 = function(x)
          local row, e = x:match("^([%w_]+)%[(.+)%]$")
          if not row then error(("ISA module '%s': a %s broadcast of '%s' (not row[e])"):format(isa.name, dt, x), 3) end
          return isa.set1(("%s(%s, %s)"):format(naming().shared("widen_" .. dt, "scalar"), row, e))
        end,
      }
      own[dt].load_from, own[dt].set1_from = own[dt].load, own[dt].set1
    end
  end
  isa.storage = own
  op("load_from", isa.load)
  op("loadn_from", isa.loadn)
  op("set1_from", isa.set1)
  op("store_to", isa.store)
  op("storen_to", isa.storen)
  --- A vector of each of n rows' values from d0 widened into buf (row i at
  -- buf + i * lanes), for FMAs that broadcast them one at a time: the C lines
  -- (at indentation ind; where dim, spelled dim_c, is not a whole number of
  -- vectors, the last part through loadn_from) and the head of the loop over
  -- those values of d.  row(i) spells row i's pointer at d0.
  function isa.widen_rows(dtype, n, row, buf, dim, dim_c, ind)
    local L, part = isa.lanes, dim % isa.lanes
    local function widen(ind2, load)
      local t = {}
      for i = 0, n - 1 do t[#t + 1] = ind2 .. isa.store(("%s + %d"):format(buf, i * L), load(row(i))) .. ";" end
      return table.concat(t, "\n")
    end
    if part == 0 then
      return widen(ind, function(r) return isa.load_from(dtype, r) end), ("for (d = d0; d < d0 + %d; d++)"):format(L)
    end
    return table.concat({
      ("%sif (d0 + %d <= %s) {"):format(ind, L, dim_c),
      widen(ind .. "    ", function(r) return isa.load_from(dtype, r) end),
      ("%s} else { /* the last %d values */"):format(ind, part),
      widen(ind .. "    ", function(r) return isa.loadn_from(dtype, r, part) end),
      ind .. "}",
    }, "\n"), ("for (d = d0; d < d0 + %d && d < %s; d++)"):format(L, dim_c)
  end
end

--- Whether a name is a known ISA.
function M.known(name)
  for _, n in ipairs(M.order) do
    if n == name then return true end
  end
  return false
end

return M
