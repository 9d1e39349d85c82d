--- Loading configs: a sandboxed Lua chunk that returns a table, checked
-- against the schema, with `--set key=value` overrides.
--
-- Expected failures return nil and a one-line message "file:line: what";
-- nothing here raises for bad input.
local schema = require("schema")
local util = require("util")

local M = {}

M.MAX_SOURCE_BYTES = 64 * 1024      -- a config is a page of data, not a program
M.MAX_INSTRUCTIONS = 10000000       -- VM instructions before we give up
M.MAX_MEMORY_KB = 64 * 1024         -- heap growth allowed while it runs

local unpack = table.unpack or unpack -- luacheck: ignore 143

-- The only globals a config sees: pure functions over data.
local function sandbox_env(safe_string)
  local function copy(t, names)
    local r = {}
    for _, n in ipairs(names) do r[n] = t[n] end
    return r
  end
  return {
    math = copy(math, { "abs", "ceil", "floor", "max", "min", "sqrt", "huge", "pi", "fmod",
      "log", "exp", "pow" }),
    string = safe_string,
    table = copy(table, { "concat", "insert", "remove", "sort" }),
    ipairs = ipairs, pairs = pairs, next = next, select = select, type = type,
    tostring = tostring, tonumber = tonumber, error = error, assert = assert,
    unpack = unpack,
  }
end

local function safe_string_lib()
  local s = {}
  for _, n in ipairs({ "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower",
    "match", "reverse", "sub", "upper" }) do
    s[n] = string[n]
  end
  s.rep = function(str, n, sep)
    if type(n) == "number" and #tostring(str) * n > M.MAX_SOURCE_BYTES then
      error("string.rep result too large", 2)
    end
    return string.rep(str, n, sep)
  end
  return s
end

--- Loads Lua source as a data chunk in the sandbox.  Returns the value it
-- returns, or nil and "name:line: message".
local function run_sandboxed(src, chunkname)
  if #src > M.MAX_SOURCE_BYTES then
    return nil, ("%s: config is larger than %d bytes"):format(chunkname, M.MAX_SOURCE_BYTES)
  end
  if src:byte(1) == 27 then
    return nil, ("%s: precompiled (binary) chunks are not accepted"):format(chunkname)
  end
  local safe_string = safe_string_lib()
  local env = sandbox_env(safe_string)
  local fn, err
  if setfenv then -- LuaJIT, Lua 5.1
    fn, err = loadstring(src, "@" .. chunkname) -- luacheck: ignore 113
    if fn then setfenv(fn, env) end
  else
    fn, err = load(src, "@" .. chunkname, "t", env)
  end
  if not fn then return nil, (err:gsub("^@", "")) end

  -- Strings share one metatable whose __index is the real string library;
  -- point it at the safe copy while the config runs.
  local smeta = getmetatable("")
  local saved_index = smeta.__index
  smeta.__index = safe_string

  local base_kb = collectgarbage("count")
  local steps = 0
  local function hook()
    steps = steps + 1000
    if steps > M.MAX_INSTRUCTIONS then error("config runs too long (instruction budget exceeded)", 2) end
    if collectgarbage("count") - base_kb > M.MAX_MEMORY_KB then
      error("config uses too much memory", 2)
    end
  end
  local jit_was_on = jit and jit.status and jit.status()
  if jit then jit.off() end -- hooks do not fire in compiled traces
  debug.sethook(hook, "", 1000)
  local ok, res = pcall(fn)
  debug.sethook()
  if jit and jit_was_on then jit.on() end
  smeta.__index = saved_index
  collectgarbage()

  if not ok then
    local msg = tostring(res)
    if not msg:find("^" .. chunkname:gsub("%p", "%%%0") .. ":") then
      msg = chunkname .. ": " .. msg
    end
    return nil, msg
  end
  return true, res
end

--- Line of the first "key =" in the source, to point errors at it.
local function line_of(src, key)
  if not src or not key then return nil end
  local n = 1
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    if line:find("%f[%w_]" .. key .. "%s*=") then return n end
    n = n + 1
  end
  return nil
end

local function locate(chunkname, src, key, msg)
  local ln = line_of(src, key) or 1
  return ("%s:%d: %s"):format(chunkname, ln, msg)
end

--- Parses one `--set key=value` (value a Lua literal) into key, value.
function M.parse_override(text)
  local key, val = text:match("^%s*([%a_][%w_%.]*)%s*=(.*)$")
  local where = ("--set %s"):format(text)
  if not key then
    return nil, ("%s: expected key=value with value a Lua literal, e.g. --set causal=true"):format(where)
  end
  local ok, v = run_sandboxed("return " .. val, where)
  if not ok then return nil, v end
  if v == nil then
    return nil, ("%s: value is empty or nil; write a Lua literal (number, true/false, \"string\", {...})")
      :format(where)
  end
  return key, v
end

--- Loads a config file (a path) and applies overrides ({ {key, value, text}, ... }).
-- Returns the normalized config, or nil and a one-line error.
function M.load(path, overrides)
  local src, err = util.read_file(path)
  if not src then return nil, ("%s: cannot read config: %s"):format(path, tostring(err)) end
  local ok, t = run_sandboxed(src, path)
  if not ok then return nil, t end
  if type(t) ~= "table" then
    return nil, ("%s:1: a config must return a table, got %s"):format(path, type(t))
  end
  return M.from_table(t, path, src, overrides)
end

--- Validates and normalizes a raw config table.  `chunkname`/`src` locate errors.
function M.from_table(t, chunkname, src, overrides)
  chunkname = chunkname or "config"
  local raw = {}
  for k, v in pairs(t) do raw[k] = v end
  for _, o in ipairs(overrides or {}) do
    local key, value = o[1], o[2]
    if not schema.keys[key] then
      local hint = schema.suggest(key)
      return nil, ("--set %s: unknown key '%s'%s"):format(o[3] or key, key,
        hint and (" (did you mean '" .. hint .. "'?)") or "")
    end
    raw[key] = value
  end
  local cfg, bad_key, msg = schema.normalize(raw)
  if not cfg then
    -- an override wins over the file when it names the bad key
    for _, o in ipairs(overrides or {}) do
      if o[1] == bad_key then return nil, ("--set %s: %s"):format(o[3] or bad_key, msg) end
    end
    return nil, locate(chunkname, src, bad_key, msg)
  end
  return cfg
end

return M
