--- kind = "additive": Bahdanau attention, e_ij = v . tanh(W_s s_i + W_h h_j
-- + b).  The table is families/classic.lua's.
return require("families.classic").family({
  name = "additive",
  score = function() return "additive" end,
  spec_family = "ATTN_FAMILY_ADDITIVE",
  features = {
    { "additive", function() return true end },
    -- the bias inside the tanh
    { "bias", function(c) return c.bias == true end },
  },
})
