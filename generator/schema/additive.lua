--- kind = "additive": Bahdanau attention, e_ij = v . tanh(W_s s_i + W_h h_j
-- + b).  The shared keys and checks are schema/classic.lua's.
local classic = require("schema.classic")

local M = {}

--- The family's keys, in the order configs are echoed.
M.order = { "query_dim", "key_dim", "attn_dim", "bias", "padding", "mask" }

--- Fills the family's keys of raw into c; returns true, or nil, key, message.
function M.normalize(raw, c, u)
  return u.run_steps({
    classic.dim("query_dim", "the decoder state's size Ds"),
    classic.dim("key_dim", "the encoder states' size Dh"),
    classic.dim("attn_dim", "the attention layer's size Da"),
    classic.bias(false), classic.masks, classic.no_tile,
  }, raw, c, u)
end

return M
