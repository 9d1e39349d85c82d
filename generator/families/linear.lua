--- kind = "linear": linear attention, phi(Q) (S, z) with phi(x) = elu(x) +
-- 1, the chunked causal algorithm and a running state; it takes attn_args
-- like sdpa.  The fields are described in families/init.lua.
local qkv = require("families.qkv")

local M = {}

M.name = "linear"
M.noun = "linear attention"
M.schema = "schema.linear"
M.planner = "planner.linear"
M.matmuls = { "f32" }
M.tiled = true
M.memory = "state"
M.args = "attn_args"

M.directions = {
  forward = {
    templates = { h = "families/linear.h.tmpl", c = "families/linear.c.tmpl" },
  },
}

M.vendor = {
  describe = function(plan)
    return qkv.describe(plan, { lead = ("linear attention, phi(x) = elu(x) + 1, eps %.9g"):format(plan.eps),
      no_scale = true, linear = true })
  end,
}

M.check = {
  required = { "heads_q", "head_dim" },
  dims = qkv.dims,
  features = {
    { "linear", function() return true end },
    -- the recurrent state (in/out)
    { "linear_state", function(c) return c.state == true end },
  },
}

--- Tuning: the prefill bucket only, on its own grid, unpruned.  tile.q is
-- the chunk of the causal algorithm (and the query rows of a tile),
-- tile.kv the keys packed and folded into the state at a time.  Short
-- chunks do less of the diagonal blocks' work and more passes over the
-- state; which wins depends on the machine (on a 2-core AVX2 EPYC, causal
-- H 8, D 64: chunks of 16 rows ran a quarter faster than the default 64).
-- The exhaustive grid takes every multiple of q_step up to q_max.
M.tune = {
  buckets = { "prefill" },
  grid = {
    qs = { 16, 32, 64, 128 },
    kvs = { 64, 128, 256, 512 },
    exhaustive = { q_step = 8, q_max = 256, kvs = { 32, 64, 128, 256, 512 } },
  },
  note = "linear attention: tile.q is the chunk of the causal algorithm; GFLOP/s count the FLOPs of the "
    .. "token-at-a-time recurrence, the same for every chunk, so they rank the candidates by time",
}

M.bench = { decode_table = false }

M.unsupported = {
  plot_mask = "which has no mask or tiles to draw (every row sees the keys up to its position with causal, "
    .. "all of them without)",
}

return M
