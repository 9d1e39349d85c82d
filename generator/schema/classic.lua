--- The keys of the classic families, the attention of RNN encoder-decoders:
-- `additive` (Bahdanau) and `luong` (dot, general and concat scores).  One
-- head; decoder states of query_dim attend over encoder states of key_dim
-- (keys and values at once); the additive and concat scores go through an
-- attention layer of attn_dim units.  schema/additive.lua and
-- schema/luong.lua are the two kinds; docs/config.md gives the semantics.
local sdpa = require("schema.sdpa")

local M = {}

--- The largest dimension a config may name (the projections' rows are
-- this long; 16384 covers every published RNN attention model).
M.MAX_DIM = 16384

--- The scores of kind = "luong".
M.SCORES = { "dot", "general", "concat" }

--- The masks a classic config may take: a run-time keep-mask, or none.
local MASKS = { "none", "bool" }

--- An integer dimension; required unless dflt is given.
function M.dim(key, what, dflt)
  return function(raw, c, u)
    local x = raw[key]
    if x == nil then
      if dflt == nil then
        return nil, key, ("'%s' is required: %s, an integer in 1..%d"):format(key, what, M.MAX_DIM)
      end
      x = type(dflt) == "function" and dflt(c) or dflt
    end
    local err = u.int_in(key, x, 1, M.MAX_DIM)
    if err then return nil, key, err end
    c[key] = x
    return true
  end
end

--- padding (as sdpa's) and mask ("none" or "bool": a keep-mask [B][Lq][Lk]).
function M.masks(raw, c, u)
  local ok, key, err = sdpa.shared.padding(raw, c, u)
  if not ok then return nil, key, err end
  c.mask = u.default(raw.mask, "none")
  if not u.one_of(c.mask, MASKS) then
    return nil, "mask", ("'mask' must be one of %s (a keep-mask; no additive bias in this family), got %s")
      :format(u.list_str(MASKS), u.show(c.mask))
  end
  return true
end

--- bias: whether b [attn_dim] is added inside the tanh.
function M.bias(dflt)
  return function(raw, c, u)
    c.bias = u.default(raw.bias, dflt)
    local err = u.bool("bias", c.bias)
    if err then return nil, "bias", err end
    return true
  end
end

--- The classic kernels have no tiles to tune: tile may only be "auto".
function M.no_tile(raw, c)
  if raw.tile ~= nil and raw.tile ~= "auto" then
    return nil, "tile", ("kind '%s' has no tiles (its loops are blocked by the ISA's registers): "
      .. "leave 'tile' out or set it to \"auto\""):format(c.kind)
  end
  return true
end

return M
