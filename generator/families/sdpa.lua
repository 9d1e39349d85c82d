--- kind = "sdpa" (the default): scaled dot-product attention, softmax(Q K^T
-- * scale + terms) V, with its masks, storage types and the prefill and
-- decode paths.  The fields are described in families/init.lua.
local qkv = require("families.qkv")

local M = {}

M.name = "sdpa"
M.noun = "sdpa attention"
M.schema = "schema.sdpa"
M.planner = "planner.sdpa"
M.matmuls = { "f32", "bf16", "int8" }
M.kv_blocks = { "q8_0", "q4_0" }
M.tiled = true
M.memory = "kv_cache"
M.args = "attn_args"

M.directions = {
  forward = {
    templates = { h = "families/sdpa.h.tmpl", c = "families/sdpa.c.tmpl" },
  },
  -- backward = true: rendered into the forward's files (their c template
  -- includes these per ISA variant, and the header the declarations), so a
  -- kernel and its gradients build, vendor and link as one
  backward = {
    templates = { h = "families/sdpa.h.tmpl", c = "families/sdpa.c.tmpl" },
    parts = { "families/sdpa_backward.c.tmpl", "families/sdpa_backward_tile.c.tmpl",
      "families/sdpa_backward_parts.c.tmpl", "families/sdpa_backward_rel.c.tmpl",
      "families/sdpa_backward_driver.c.tmpl" },
  },
}

M.vendor = { describe = function(plan) return qkv.describe(plan) end }

M.check = {
  required = { "heads_q", "head_dim" },
  dims = qkv.dims,
  -- the keys of sdpa are features of their own (tests/kernel_sets.lua)
  features = {},
}

M.tune = { buckets = { "prefill", "decode" } }

--- Its causal presets with a decode path are rows of the suite's decode table.
M.bench = { decode_table = true }

M.unsupported = {}

return M
