--- The linear family's keys (linear attention, "Transformers are RNNs"):
-- the heads, head dims, causal rule and padding of sdpa, the feature map,
-- eps, and whether the kernel carries a recurrent state.  docs/config.md
-- gives the semantics.
local sdpa = require("schema.sdpa")

local M = {}

--- The feature maps phi a config can name.
local FEATURE_MAPS = { "elu1" }

--- The default eps added to each row's denominator phi(q) . z.
M.DEFAULT_EPS = 1e-6

--- The family's keys, in the order configs are echoed.
M.order = { "heads_q", "heads_kv", "head_dim", "head_dim_v", "causal", "padding", "feature_map", "eps", "state" }

-- feature_map, eps, state
local function linear_terms(raw, c, u)
  c.feature_map = u.default(raw.feature_map, "elu1")
  if not u.one_of(c.feature_map, FEATURE_MAPS) then
    local got = type(c.feature_map) == "string" and u.quoted(c.feature_map) or u.show(c.feature_map)
    return nil, "feature_map", ("'feature_map' must be one of %s (elu(x) + 1), got %s")
      :format(u.list_str(FEATURE_MAPS), got)
  end
  c.eps = u.default(raw.eps, M.DEFAULT_EPS)
  local err = u.finite_positive("eps", c.eps)
  if err then return nil, "eps", err end
  c.state = u.default(raw.state, false)
  err = u.bool("state", c.state)
  if err then return nil, "state", err end
  return true
end

--- Fills the family's keys of raw into c; returns true, or nil, key, message.
function M.normalize(raw, c, u)
  local s = sdpa.shared
  return u.run_steps({ s.heads, s.head_dims, s.causal, s.padding, linear_terms }, raw, c, u)
end

return M
