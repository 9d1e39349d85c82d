--- kind = "luong": Luong attention with a dot, general (h . W s) or concat
-- (v . tanh(W [h; s] + b)) score.  The shared keys and checks are
-- schema/classic.lua's.
local classic = require("schema.classic")

local M = {}

--- The family's keys, in the order configs are echoed.
M.order = { "score", "query_dim", "key_dim", "attn_dim", "bias", "padding", "mask" }

-- score, and the keys that depend on it: dot needs key_dim = query_dim;
-- attn_dim and bias belong to concat alone
local function score(raw, c, u)
  c.score = u.default(raw.score, "dot")
  if not u.one_of(c.score, classic.SCORES) then
    return nil, "score", ("'score' must be one of %s, got %s"):format(u.list_str(classic.SCORES),
      type(c.score) == "string" and u.quoted(c.score) or u.show(c.score))
  end
  return true
end

local function per_score(raw, c, u)
  if c.score == "dot" and c.key_dim ~= c.query_dim then
    return nil, "key_dim", ("score \"dot\" multiplies s by h: 'key_dim' (%d) must equal 'query_dim' (%d)")
      :format(c.key_dim, c.query_dim)
  end
  if c.score ~= "concat" then
    for _, k in ipairs({ "attn_dim", "bias" }) do
      if raw[k] ~= nil then
        return nil, k, ("'%s' belongs to score \"concat\"; score %s has none"):format(k, u.quoted(c.score))
      end
    end
    c.bias = false
    return true
  end
  return u.run_steps({ classic.dim("attn_dim", "the attention layer's size Da of score \"concat\""),
    classic.bias(true) }, raw, c, u)
end

--- Fills the family's keys of raw into c; returns true, or nil, key, message.
function M.normalize(raw, c, u)
  return u.run_steps({
    score,
    classic.dim("query_dim", "the decoder state's size Ds"),
    classic.dim("key_dim", "the encoder states' size Dh", function(cc) return cc.query_dim end),
    per_score, classic.masks, classic.no_tile,
  }, raw, c, u)
end

return M
