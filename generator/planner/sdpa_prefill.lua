--- The sdpa prefill path's plan of one ISA variant (families/sdpa_prefill):
-- the sizes its code names as constants (PREFILL_* in the variant's part of
-- the file) and its memory, one request a call: the packed K^T and V of a
-- chunk of keys, the rows' carried sums, the gathered panels of a sparse
-- pattern, and a scratch of `thread` bytes a thread (its scratch struct, a
-- whole number of ATTN_ALIGN bytes), all in one block that is the caller's
-- workspace or one allocation of the hook's (families/sdpa_prefill_mem).
local M = {}

M.ALIGN = 64 -- ATTN_ALIGN: every part of the block starts on a cache line

local function up(n, a) return math.ceil(n / a) * a end

--- Bytes of a thread's scratch struct (families/sdpa_prefill's scratch), an
-- upper bound: each array on 8 bytes, a line of slack, whole lines.  The
-- template checks the struct fits (a negative array size where it does not).
function M.scratch_bytes(p, v, pf)
  local TQ, TK = p.tile.q, p.tile.kv
  local fields = {
    TQ * pf.qrow * pf.esize, -- q
    TQ * TK * 4, -- s
    TQ * pf.dvp * 4, -- o
    3 * TQ * 4, -- m, l, alpha
    5 * TQ * 8, -- lo, hi, sink_hi, first, last
    4, -- nt
  }
  if v.dp then fields[#fields + 1] = TQ * TK * 2 end -- p, bf16
  if p.entropy then fields[#fields + 1] = TQ * 4 end -- t
  if p.sparse then fields[#fields + 1] = 2 * TQ * 8 end -- sparse_lo, spos
  if p.rel_bias then fields[#fields + 1] = (TQ + TK) * 4 end -- rb
  if pf.gather == "fixed" then -- sk, sv
    local kvb = require("planner").DTYPE_BYTES[p.dtype.kv]
    fields[#fields + 1] = pf.nc * p.D * kvb
    fields[#fields + 1] = pf.nc * p.Dv * kvb
  end
  local bytes = M.ALIGN
  for _, f in ipairs(fields) do bytes = bytes + up(f, 8) end
  return up(bytes, M.ALIGN)
end

--- Variant v's prefill plan: the elements of its packed operands, its
-- chunks, the floats a row's carried sums take, and a thread's scratch.
function M.plan(p, v, index)
  local dp = v.dp
  local pf = {
    index = index - 1, -- its row of the file's table of prefill variants (C, from 0)
    esize = dp and 2 or 4, -- bytes of a packed Q, K^T or V element (bf16 pairs or f32)
    qrow = dp and 2 * v.dp_pairs or v.dqs, -- elements of a packed query row
    ktkey = dp and 2 * v.dp_pairs or p.D, -- elements of the K^T panels per key
    dvp = v.dvp, -- a packed V row (Dv in whole vectors)
    nc = v.qk.nc, -- keys of a K^T panel
    part = v.dvp + 2 + (p.entropy and 1 or 0), -- floats of a row's carried sums (O, m, l, and t)
    gather = p.sparse_gather and p.sparse.pattern or nil, -- "fixed" or "strided": a gathered pass
    -- keys a chunk and the keys past which a call runs chunks (0: one chunk)
    chunk = (not p.sparse_gather and v.prefill_chunk) or 0,
    chunk_from = (not p.sparse_gather and v.prefill_chunk_from) or 0,
    align = M.ALIGN,
  }
  pf.thread = M.scratch_bytes(p, v, pf)
  return pf
end

return M
