--- The config schema: every key of DESIGN.md section 2, its type, default
-- and allowed values.  normalize() turns a raw table into a config with
-- every key present and the conveniences (sliding_window, causal) folded
-- into the window.
--- Names a kernel cannot take: its header <name>.h would share the include
-- guard ATTN_<NAME>_H of a runtime header (attn_runtime.h, ...), or take the
-- file name of one (or of a vendored folder's attngen.h and example.c).
local RESERVED_NAMES = { runtime = true, reference = true, npy = true, verify = true,
  attn_runtime = true, attn_reference = true, attn_npy = true, attn_verify = true, attngen = true, example = true }

local M = {}

local KINDS = { "sdpa" }

--- Query rows up to which the decode path runs (measured: see README).
M.DEFAULT_DECODE_MAX_Q = 16
local PLANNED_KINDS = { linear = true, additive = true, luong = true }
local MASKS = { "none", "bool", "bias" }
local DTYPES = { "f32" }
local PLANNED_DTYPES = { bf16 = true, f16 = true }
local ISAS = { "avx512", "avx2", "neon", "scalar" }

--- key -> one-line description (also the order keys are echoed in).
M.order = {
  "name", "kind", "heads_q", "heads_kv", "head_dim", "head_dim_v", "causal", "window",
  "sliding_window", "global_tokens", "padding", "mask", "scale", "softcap", "alibi", "dtype",
  "isa", "tile", "decode_max_q",
}
M.keys = {}
for _, k in ipairs(M.order) do M.keys[k] = true end

local function default(v, d)
  if v == nil then return d end
  return v
end

-- A value in a one-line message: control characters (a newline in a
-- string value) are escaped so the message stays one line.
local function escape_controls(s)
  return (s:gsub("%c", function(c) return ("\\%03d"):format(c:byte()) end))
end
local function show(v) return escape_controls(tostring(v)) end
local function quoted(v) return escape_controls((("%q"):format(tostring(v)):gsub("\\\n", "\\n"))) end

local function is_int(v) return type(v) == "number" and v == math.floor(v) and v == v and v < 2 ^ 31 end
local function list_str(t) return table.concat(t, ", ") end
local function one_of(v, t)
  for _, x in ipairs(t) do if x == v then return true end end
  return false
end

--- Edit distance, for "did you mean".
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = (a:sub(i, i) == b:sub(j, j)) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

--- The closest known key to `key`, or nil when none is close.
function M.suggest(key, candidates)
  candidates = candidates or M.order
  key = tostring(key)
  local best, bestd
  for _, k in ipairs(candidates) do
    local d = distance(key:lower(), k)
    if not bestd or d < bestd then best, bestd = k, d end
  end
  if bestd and bestd <= math.max(2, math.floor(#key / 3)) then return best end
  return nil
end

local function int_in(key, v, lo, hi)
  if not is_int(v) then
    return ("'%s' must be an integer in %d..%d, got %s"):format(key, lo, hi, show(v))
  end
  if v < lo or v > hi then
    return ("'%s' must be in %d..%d, got %d"):format(key, lo, hi, v)
  end
end

local function bool(key, v)
  if type(v) ~= "boolean" then return ("'%s' must be true or false, got %s"):format(key, show(v)) end
end

local function finite_positive(key, v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
    return ("'%s' must be a finite number > 0, got %s"):format(key, show(v))
  end
end

local function check_subkeys(key, t, allowed)
  for k in pairs(t) do
    if not one_of(k, allowed) then
      local hint = M.suggest(k, allowed)
      return ("'%s' has unknown field '%s' (allowed: %s)%s"):format(key, show(k), list_str(allowed),
        hint and ("; did you mean '" .. hint .. "'?") or "")
    end
  end
end

--- Returns cfg, or nil, offending key, message.
function M.normalize(raw)
  for k in pairs(raw) do
    if not M.keys[k] then
      local hint = type(k) == "string" and M.suggest(k) or nil
      return nil, k, ("unknown key '%s'%s"):format(show(k),
        hint and (" (did you mean '" .. hint .. "'?)") or (" (known keys: " .. list_str(M.order) .. ")"))
    end
  end
  local c = {}
  local err

  -- name
  c.name = raw.name
  if type(c.name) ~= "string" or not c.name:match("^[%a_][%w_]*$") or #c.name > 64 then
    return nil, "name", ("'name' is required: a C identifier of at most 64 characters, got %s")
      :format(raw.name == nil and "nothing" or quoted(raw.name))
  end
  if RESERVED_NAMES[c.name:lower()] then
    return nil, "name", ("'name' %s is taken by the runtime's or a vendored folder's own files; choose another")
      :format(quoted(c.name))
  end

  -- kind
  c.kind = default(raw.kind, "sdpa")
  if not one_of(c.kind, KINDS) then
    if PLANNED_KINDS[c.kind] then
      return nil, "kind", ("kind '%s' is not implemented yet (available: %s)"):format(c.kind, list_str(KINDS))
    end
    return nil, "kind", ("'kind' must be one of %s, got %s"):format(list_str(KINDS), show(c.kind))
  end

  -- heads
  if raw.heads_q == nil then return nil, "heads_q", "'heads_q' is required: an integer >= 1" end
  err = int_in("heads_q", raw.heads_q, 1, 65536)
  if err then return nil, "heads_q", err end
  c.heads_q = raw.heads_q
  c.heads_kv = default(raw.heads_kv, c.heads_q)
  err = int_in("heads_kv", c.heads_kv, 1, 65536)
  if err then return nil, "heads_kv", err end
  if c.heads_q % c.heads_kv ~= 0 then
    return nil, "heads_kv", ("'heads_kv' (%d) must divide 'heads_q' (%d)"):format(c.heads_kv, c.heads_q)
  end

  -- head dims
  if raw.head_dim == nil then return nil, "head_dim", "'head_dim' is required: an integer in 1..512" end
  err = int_in("head_dim", raw.head_dim, 1, 512)
  if err then return nil, "head_dim", err end
  c.head_dim = raw.head_dim
  c.head_dim_v = default(raw.head_dim_v, c.head_dim)
  err = int_in("head_dim_v", c.head_dim_v, 1, 512)
  if err then return nil, "head_dim_v", err end

  -- causal, window, sliding_window
  c.causal = default(raw.causal, false)
  err = bool("causal", c.causal)
  if err then return nil, "causal", err end
  local left, right = -1, -1
  if raw.window ~= nil then
    if raw.sliding_window ~= nil then
      return nil, "sliding_window", "give either 'window' or 'sliding_window', not both"
    end
    if type(raw.window) ~= "table" then
      return nil, "window", ("'window' must be a table {left=int, right=int} (-1 = unbounded), got %s")
        :format(show(raw.window))
    end
    err = check_subkeys("window", raw.window, { "left", "right" })
    if err then return nil, "window", err end
    left = default(raw.window.left, -1)
    right = default(raw.window.right, -1)
    err = int_in("window.left", left, -1, 2 ^ 30) or int_in("window.right", right, -1, 2 ^ 30)
    if err then return nil, "window", err end
  end
  if raw.sliding_window ~= nil then
    err = int_in("sliding_window", raw.sliding_window, 1, 2 ^ 30)
    if err then return nil, "sliding_window", err end
    left = raw.sliding_window - 1
  end
  if c.causal then right = 0 end
  c.window = { left = left, right = right }
  c.sliding_window = nil -- folded into window

  -- global tokens
  c.global_tokens = default(raw.global_tokens, 0)
  err = int_in("global_tokens", c.global_tokens, 0, 2 ^ 30)
  if err then return nil, "global_tokens", err end

  c.padding = default(raw.padding, false)
  err = bool("padding", c.padding)
  if err then return nil, "padding", err end

  c.mask = default(raw.mask, "none")
  if not one_of(c.mask, MASKS) then
    return nil, "mask", ("'mask' must be one of %s, got %s"):format(list_str(MASKS), show(c.mask))
  end

  -- scale, softcap, alibi
  if raw.scale ~= nil then
    err = finite_positive("scale", raw.scale)
    if err then return nil, "scale", err end
  end
  c.scale = raw.scale or 1 / math.sqrt(c.head_dim)
  if raw.softcap ~= nil then
    err = finite_positive("softcap", raw.softcap)
    if err then return nil, "softcap", err end
  end
  c.softcap = raw.softcap
  c.alibi = default(raw.alibi, false)
  err = bool("alibi", c.alibi)
  if err then return nil, "alibi", err end

  c.dtype = default(raw.dtype, "f32")
  if not one_of(c.dtype, DTYPES) then
    if PLANNED_DTYPES[c.dtype] then
      return nil, "dtype", ("dtype '%s' is not implemented yet (available: %s)"):format(c.dtype, list_str(DTYPES))
    end
    return nil, "dtype", ("'dtype' must be one of %s, got %s"):format(list_str(DTYPES), show(c.dtype))
  end

  -- isa: a list, normalized to the known order (best first)
  if raw.isa == nil then
    c.isa = {}
    for i, n in ipairs(ISAS) do c.isa[i] = n end
  else
    if type(raw.isa) ~= "table" or #raw.isa == 0 then
      return nil, "isa", ("'isa' must be a non-empty list of %s"):format(list_str(ISAS))
    end
    local want = {}
    for _, n in ipairs(raw.isa) do
      if not one_of(n, ISAS) then
        local hint = type(n) == "string" and M.suggest(n, ISAS) or nil
        return nil, "isa", ("unknown ISA '%s' in 'isa' (known: %s)%s"):format(show(n), list_str(ISAS),
          hint and ("; did you mean '" .. hint .. "'?") or "")
      end
      want[n] = true
    end
    c.isa = {}
    for _, n in ipairs(ISAS) do if want[n] then c.isa[#c.isa + 1] = n end end
  end

  -- decode path threshold (an attngen extension of the contract's keys)
  c.decode_max_q = default(raw.decode_max_q, M.DEFAULT_DECODE_MAX_Q)
  err = int_in("decode_max_q", c.decode_max_q, 0, 64)
  if err then return nil, "decode_max_q", err end

  -- tile
  if raw.tile == nil or raw.tile == "auto" then
    c.tile = "auto"
  elseif type(raw.tile) == "table" then
    err = check_subkeys("tile", raw.tile, { "q", "kv" })
    if err then return nil, "tile", err end
    local q, kv = raw.tile.q, raw.tile.kv
    err = int_in("tile.q", q, 1, 1024) or int_in("tile.kv", kv, 16, 4096)
    if err then return nil, "tile", err end
    if kv % 16 ~= 0 then
      return nil, "tile", ("'tile.kv' must be a multiple of 16 (the widest vector), got %d"):format(kv)
    end
    c.tile = { q = q, kv = kv }
  else
    return nil, "tile", ("'tile' must be \"auto\" or {q=int, kv=int}, got %s"):format(show(raw.tile))
  end
  return c
end

return M
