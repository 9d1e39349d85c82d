--- kind = "luong": Luong attention with a dot, general or concat score.
-- The table is families/classic.lua's.
-- luong's score of a raw config (default "dot"): "dot", "general" or "concat"
local function score(c) return c.score or "dot" end

return require("families.classic").family({
  name = "luong",
  score = function(cfg) return cfg.score end,
  spec_family = "ATTN_FAMILY_LUONG",
  features = {
    { "luong_dot", function(c) return score(c) == "dot" end },
    { "luong_general", function(c) return score(c) == "general" end },
    { "luong_concat", function(c) return score(c) == "concat" end },
    -- the bias inside the tanh (concat's default)
    { "bias", function(c) return c.bias == true or (score(c) == "concat" and c.bias == nil) end },
  },
})
