--- The config schema: the keys every family shares (name, kind, dtype,
-- isa, tile), the checks the family schemas share, and normalize(), which
-- turns a raw table into a config with every key present.  Each family's
-- own keys live in its schema module (the family table's `schema`,
-- schema/<kind>.lua; docs/config.md lists them all).
--- Names a kernel cannot take: its header <name>.h would share the include
-- guard ATTN_<NAME>_H of a runtime header (attn_runtime.h, ...), or take the
-- file name of one (or of a vendored folder's attngen.h and example.c).
local RESERVED_NAMES = { runtime = true, reference = true, npy = true, verify = true,
  attn_runtime = true, attn_reference = true, attn_npy = true, attn_verify = true, attngen = true, example = true }

local M = {}

local families = require("families")

--- Kernel families: the registry's (families/init.lua).
local KINDS = families.names
local DTYPES = { "f32", "bf16", "f16" }
--- llama.cpp's block types (K/V only, sdpa; a block holds BLOCK values)
local BLOCK_DTYPES = { "q8_0", "q4_0" }
local BLOCK = 32
M.BLOCK_DTYPES = BLOCK_DTYPES
M.BLOCK = BLOCK
local MATMULS = { "f32", "bf16", "int8" }
local ISAS = require("isa").order -- the one list of ISAs, best first

--- Keys of every family, in the order configs are echoed: name and kind
-- first, the family's keys (FAMILY marks where), then these.
local COMMON_HEAD = { "name", "kind" }
local COMMON_TAIL = { "dtype", "matmul", "isa", "tile" }

local function family_module(kind) return families.schema(kind) end

--- The keys of a family, in echo order.
function M.order_of(kind)
  local t = {}
  for _, k in ipairs(COMMON_HEAD) do t[#t + 1] = k end
  for _, k in ipairs(family_module(kind).order) do t[#t + 1] = k end
  for _, k in ipairs(COMMON_TAIL) do t[#t + 1] = k end
  return t
end

--- The keys a config of `kind` may have, as a set and in echo order (the
-- sdpa family's when the kind is not a known one: normalize says so).
function M.keys_of(kind)
  local known = false
  for _, k in ipairs(KINDS) do known = known or k == kind end
  local order = M.order_of(known and kind or families.DEFAULT)
  local set = {}
  for _, k in ipairs(order) do set[k] = true end
  return set, order
end

--- The keys of the sdpa family (the default kind), in echo order, and as a set.
M.order = M.order_of(families.DEFAULT)
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

-- runs a family's checks in order: each fills c from raw and returns true,
-- or nil, key, message (the first failure is returned)
local function run_steps(steps, raw, c, u)
  for _, step in ipairs(steps) do
    local ok, key, err = step(raw, c, u)
    if not ok then return nil, key, err end
  end
  return true
end

-- the checks the family schemas share
M.util = {
  run_steps = run_steps,
  default = default, show = show, quoted = quoted, int_in = int_in, bool = bool,
  finite_positive = finite_positive, check_subkeys = check_subkeys, one_of = one_of, list_str = list_str,
}

local function check_name(raw)
  local name = raw.name
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 64 then
    return nil, "name", ("'name' is required: a C identifier of at most 64 characters, got %s")
      :format(name == nil and "nothing" or quoted(name))
  end
  if RESERVED_NAMES[name:lower()] then
    return nil, "name", ("'name' %s is taken by the runtime's or a vendored folder's own files; choose another")
      :format(quoted(name))
  end
  return name
end

local function check_kind(raw)
  local kind = default(raw.kind, families.DEFAULT)
  if not one_of(kind, KINDS) then
    return nil, "kind", ("'kind' must be one of %s, got %s"):format(list_str(KINDS), show(kind))
  end
  return kind
end

local function check_keys(raw, order)
  local known = {}
  for _, k in ipairs(order) do known[k] = true end
  for k in pairs(raw) do
    if not known[k] then
      local hint = type(k) == "string" and M.suggest(k, order) or nil
      return nil, k, ("unknown key '%s'%s"):format(show(k),
        hint and (" (did you mean '" .. hint .. "'?)") or (" (known keys: " .. list_str(order) .. ")"))
    end
  end
  return true
end

-- dtype: one storage type for every tensor, or { q =, kv =, o = } (a
-- missing one is f32); normalized to a string when all three agree.  K/V
-- may also take llama.cpp's blocks (families with kv_blocks), whose rows
-- are whole blocks: D and Dv multiples of 32.
local function check_dtype(raw, c)
  local dtype = default(raw.dtype, "f32")
  local blocks = families.get(c.kind).kv_blocks or {}
  local function one(key, v, extra)
    local allowed = DTYPES
    if extra then
      allowed = {}
      for _, d in ipairs(DTYPES) do allowed[#allowed + 1] = d end
      for _, d in ipairs(extra) do allowed[#allowed + 1] = d end
    end
    if not one_of(v, allowed) then
      local why = one_of(v, BLOCK_DTYPES) and ((key == "dtype.kv" or key == "dtype") and #blocks > 0
        and ("; %s is a K/V type: dtype = {kv = \"%s\"}"):format(v, v)
        or (" (%s is a K/V type of the %s family)"):format(v, "sdpa")) or ""
      return nil, ("'%s' must be one of %s, got %s%s"):format(key, list_str(allowed), show(v), why)
    end
    return v
  end
  if type(dtype) ~= "table" then
    local v, err = one("dtype", dtype)
    if not v then return nil, "dtype", err end
    return v
  end
  local err = check_subkeys("dtype", dtype, { "q", "kv", "o" })
  if err then return nil, "dtype", err end
  local t = {}
  for _, k in ipairs({ "q", "kv", "o" }) do
    t[k], err = one("dtype." .. k, default(dtype[k], "f32"), k == "kv" and blocks or nil)
    if not t[k] then return nil, "dtype", err end
  end
  if one_of(t.kv, BLOCK_DTYPES) and (c.head_dim % BLOCK ~= 0 or c.head_dim_v % BLOCK ~= 0) then
    return nil, "dtype", ("dtype.kv = \"%s\" stores rows as blocks of %d values: head_dim and head_dim_v must be "
      .. "multiples of %d, got %d and %d"):format(t.kv, BLOCK, BLOCK, c.head_dim, c.head_dim_v)
  end
  if t.q == t.kv and t.kv == t.o then return t.q end
  return t
end

--- Whether a storage type is one of llama.cpp's blocks (q8_0, q4_0).
function M.is_block(dtype) return one_of(dtype, BLOCK_DTYPES) end

--- The storage type of each tensor of a normalized dtype: { q =, kv =, o = }.
function M.dtypes(dtype)
  if type(dtype) == "table" then return { q = dtype.q, kv = dtype.kv, o = dtype.o } end
  return { q = dtype, kv = dtype, o = dtype }
end

-- matmul: the precision of the products (after dtype: bf16 needs bf16 Q and K/V)
local function check_matmul(raw, c)
  local matmul = default(raw.matmul, "f32")
  if not one_of(matmul, MATMULS) then
    return nil, "matmul", ("'matmul' must be one of %s, got %s"):format(list_str(MATMULS), show(matmul))
  end
  local family = families.get(c.kind)
  if not one_of(matmul, family.matmuls) then
    local takers = {}
    for _, n in ipairs(KINDS) do
      if one_of(matmul, families.get(n).matmuls) then takers[#takers + 1] = n end
    end
    return nil, "matmul", ('matmul = "%s" is for the %s famil%s; kind "%s" multiplies in %s')
      :format(matmul, list_str(takers), #takers == 1 and "y" or "ies", c.kind, list_str(family.matmuls))
  end
  if matmul == "bf16" then
    local t = M.dtypes(c.dtype)
    if M.is_block(t.kv) then
      return nil, "matmul", ("matmul = \"bf16\" multiplies bf16 operands; a %s cache is read with matmul = \"f32\" "
        .. "(dequantized in registers)"):format(t.kv)
    end
    if t.q ~= "bf16" or t.kv ~= "bf16" then
      return nil, "matmul", ("matmul = \"bf16\" multiplies bf16 operands: it needs Q and K/V stored as bf16, "
        .. "got Q %s and K/V %s"):format(t.q, t.kv)
    end
  end
  if matmul == "int8" and not M.is_block(M.dtypes(c.dtype).kv) then
    return nil, "matmul", ("matmul = \"int8\" multiplies q8_0-quantized Q by the codes of a block cache: it needs "
      .. "dtype.kv = %s, got %s"):format(list_str(BLOCK_DTYPES), M.dtypes(c.dtype).kv)
  end
  return matmul
end

-- isa: a list, normalized to the known order (best first).  An ISA module
-- with a `matmul` field exists only for that product type (avx512bf16's
-- dot products): the default list leaves it out of other configs, and
-- naming it there is an error.
local function check_isa(raw, c)
  local function fits(n)
    local need = require("isa").get(n).matmul
    return need == nil or need == c.matmul
  end
  if raw.isa == nil then
    local all = {}
    for _, n in ipairs(ISAS) do if fits(n) then all[#all + 1] = n end end
    return all
  end
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
    if not fits(n) then
      return nil, "isa", ("ISA '%s' in 'isa' computes matmul = \"%s\" products: it needs that 'matmul', got \"%s\"")
        :format(n, require("isa").get(n).matmul, c.matmul)
    end
    want[n] = true
  end
  local isa = {}
  for _, n in ipairs(ISAS) do if want[n] then isa[#isa + 1] = n end end
  return isa
end

local function check_tile(raw)
  if raw.tile == nil or raw.tile == "auto" then return "auto" end
  if type(raw.tile) ~= "table" then
    return nil, "tile", ("'tile' must be \"auto\" or {q=int, kv=int}, got %s"):format(show(raw.tile))
  end
  local err = check_subkeys("tile", raw.tile, { "q", "kv" })
  if err then return nil, "tile", err end
  local q, kv = raw.tile.q, raw.tile.kv
  err = int_in("tile.q", q, 1, 1024) or int_in("tile.kv", kv, 16, 4096)
  if err then return nil, "tile", err end
  if kv % 16 ~= 0 then
    return nil, "tile", ("'tile.kv' must be a multiple of 16 (the widest vector), got %d"):format(kv)
  end
  return { q = q, kv = kv }
end

--- Returns cfg, or nil, offending key, message.  The kind is read first
-- (its schema knows the other keys; an unknown kind is the error), then
-- the common keys, then the family's.
function M.normalize(raw)
  local kind, key, err = check_kind(raw)
  if not kind then return nil, key, err end
  local ok
  ok, key, err = check_keys(raw, M.order_of(kind))
  if not ok then return nil, key, err end
  local c = {}
  c.name, key, err = check_name(raw)
  if not c.name then return nil, key, err end
  c.kind = kind
  ok, key, err = family_module(kind).normalize(raw, c, M.util)
  if not ok then return nil, key, err end
  for _, step in ipairs({ { "dtype", check_dtype }, { "matmul", check_matmul }, { "isa", check_isa },
    { "tile", check_tile } }) do
    c[step[1]], key, err = step[2](raw, c)
    if c[step[1]] == nil then return nil, key, err end
  end
  return c
end

return M
