--- Loading configs: a sandboxed Lua chunk that returns a table, checked
-- against the schema, with `--set key=value` overrides.
--
-- Expected failures return nil and a one-line message "file:line: what";
-- nothing here raises for bad input.
local schema = require("schema")
local util = require("util")

local M = {}

M.MAX_SOURCE_BYTES = 64 * 1024      -- a config is a page of data, not a program
M.MAX_INSTRUCTIONS = 1000000        -- VM instructions before we give up
M.MAX_SECONDS = 2                   -- CPU time before we give up (one instruction can be slow)
M.MAX_MEMORY_KB = 64 * 1024         -- heap growth allowed while it runs
M.MAX_STRING_BYTES = 64 * 1024      -- the longest string one library call may build

local unpack = table.unpack or unpack -- luacheck: ignore 143

-- "<this file>:<line>: ", to strip from messages raised inside the sandbox machinery
local SELF_PATTERN = debug.getinfo(1, "S").source:gsub("^@", ""):gsub("%p", "%%%0") .. ":%d+: "
local PLACEHOLDER = "config" -- the chunk name Lua sees

-- The sandbox's limits are checked by a hook between VM instructions.  A
-- library call is one instruction, so the calls that can build a string far
-- larger than their arguments check the size of their result first.  These
-- wrappers run while the string metatable points at the sandbox's string
-- table: they call the real library through `string`, never as methods.
local function too_large(what)
  error(what .. " result too large", 3)
end

local function safe_rep(str, n, sep)
  local count = tonumber(n)
  if count and count > 1 then
    local size = #tostring(str) * count + (sep ~= nil and #tostring(sep) or 0) * (count - 1)
    if size > M.MAX_STRING_BYTES then too_large("string.rep") end
  end
  return (string.rep(str, n, sep))
end

local function safe_gsub(str, pattern, repl, n)
  local t = type(repl)
  if t == "table" or t == "function" then
    -- count what the replacements add (a table lookup runs no VM instruction,
    -- and Lua 5.4's string buffers are not part of collectgarbage("count"))
    local f, map, total = repl, repl, 0
    if t == "table" then f = function(key) return map[key] end end
    repl = function(...)
      local r = f(...)
      if type(r) == "string" or type(r) == "number" then
        total = total + #tostring(r)
        if total > M.MAX_STRING_BYTES then too_large("string.gsub") end
      end
      return r
    end
  elseif (t == "string" or t == "number") and (type(str) == "string" or type(str) == "number") then
    -- each match adds at most the replacement text, and each %1..%9 at
    -- most its capture: matches do not overlap, so all of them add <= #str
    local len, r = #tostring(str), tostring(repl)
    local matches = len + 1
    local limit = tonumber(n)
    if limit and limit < matches then matches = math.max(limit, 0) end
    local _, refs = string.gsub(r, "%%%d", "")
    if len + matches * #r + refs * (len + 24 * matches) > M.MAX_STRING_BYTES then
      too_large("string.gsub")
    end
  end
  return string.gsub(str, pattern, repl, n)
end

local function safe_format(fmt, ...)
  if type(fmt) == "string" then
    local args, size = { ... }, #fmt
    for i = 1, select("#", ...) do
      -- %q at most quadruples a string; a number prints in < 512 characters
      size = size + (type(args[i]) == "string" and 4 * #args[i] + 2 + 99 or 512)
    end
    if size > M.MAX_STRING_BYTES then too_large("string.format") end
  end
  return (string.format(fmt, ...))
end

local function safe_concat(list, sep, i, j)
  if type(list) == "table" then
    local first, last = tonumber(i) or 1, tonumber(j) or #list
    local seplen = sep ~= nil and #tostring(sep) or 0
    local size = 0
    for k = first, last do
      local v = list[k]
      size = size + (type(v) == "string" and #v or 32) + (k > first and seplen or 0)
      if size > M.MAX_STRING_BYTES then too_large("table.concat") end
    end
  end
  return (table.concat(list, sep, i, j))
end

-- The only globals a config sees: pure functions over data.
local function sandbox_env(safe_string)
  local function copy(t, names)
    local r = {}
    for _, n in ipairs(names) do r[n] = t[n] end
    return r
  end
  local tbl = copy(table, { "insert", "remove", "sort" })
  tbl.concat = safe_concat
  return {
    math = copy(math, { "abs", "ceil", "floor", "max", "min", "sqrt", "huge", "pi", "fmod",
      "log", "exp", "pow" }),
    string = safe_string,
    table = tbl,
    ipairs = ipairs, pairs = pairs, next = next, select = select, type = type,
    tostring = tostring, tonumber = tonumber, error = error, assert = assert,
    unpack = unpack,
  }
end

local function safe_string_lib()
  local s = {}
  for _, n in ipairs({ "byte", "char", "find", "gmatch", "len", "lower", "match", "reverse",
    "sub", "upper" }) do
    s[n] = string[n]
  end
  s.rep, s.gsub, s.format = safe_rep, safe_gsub, safe_format
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
  -- Lua shortens long chunk names ("...of/a/config.lua:3:"), so the chunk is
  -- loaded under a short placeholder that messages then trade for the name.
  -- A message is made one line, whatever the config raised, with no position
  -- inside this file (a stack overflow can strike while the hook runs).
  local function named(msg)
    msg = tostring(msg):gsub("%s*\n%s*", " "):gsub(SELF_PATTERN, "")
    if msg:sub(1, #PLACEHOLDER + 1) == PLACEHOLDER .. ":" then
      return chunkname .. msg:sub(#PLACEHOLDER + 1)
    end
    return chunkname .. ": " .. msg
  end
  local fn, err
  if setfenv then -- LuaJIT, Lua 5.1
    fn, err = loadstring(src, "=" .. PLACEHOLDER) -- luacheck: ignore 113
    if fn then setfenv(fn, env) end
  else
    fn, err = load(src, "=" .. PLACEHOLDER, "t", env)
  end
  if not fn then return nil, named(err) end

  -- The config runs in its own coroutine with a hook on every instruction:
  -- a coarser hook lets a few instructions (s = s .. s) outgrow any memory
  -- limit before it looks.  LuaJIT's hooks are global, not per coroutine,
  -- so the hook ignores every other thread.
  local co = coroutine.create(fn)
  local source = "=" .. PLACEHOLDER
  local steps, start, base_kb = 0, os.clock(), 0
  local function stop(msg) -- an error at the config's line, not at a wrapper's
    local level, info = 2, debug.getinfo(2, "Sl")
    while info and info.source ~= source do
      level = level + 1
      info = debug.getinfo(level, "Sl")
    end
    if info and info.currentline and info.currentline > 0 then
      error(string.format("%s:%d: %s", chunkname, info.currentline, msg), 0)
    end
    error(chunkname .. ": " .. msg, 0)
  end
  local function hook()
    if coroutine.running() ~= co then return end
    steps = steps + 1
    if steps > M.MAX_INSTRUCTIONS then stop("config runs too long (instruction budget exceeded)") end
    if steps % 1024 == 0 and os.clock() - start > M.MAX_SECONDS then
      stop(string.format("config runs too long (more than %g s)", M.MAX_SECONDS))
    end
    if collectgarbage("count") - base_kb > M.MAX_MEMORY_KB then stop("config uses too much memory") end
  end

  -- Strings share one metatable whose __index is the real string library;
  -- point it at the safe copy while the config runs.
  local smeta = getmetatable("")
  local saved_index = smeta.__index
  smeta.__index = safe_string

  local jit_was_on = jit and jit.status and jit.status()
  if jit then jit.off() end -- hooks do not fire in compiled traces
  base_kb = collectgarbage("count")
  debug.sethook(co, hook, "", 1)
  local ok, res = coroutine.resume(co)
  debug.sethook(co)
  if jit and jit_was_on then jit.on() end
  smeta.__index = saved_index
  collectgarbage()

  if not ok then
    -- stop() and the wrappers name the file themselves
    local msg = tostring(res)
    if msg:sub(1, #chunkname + 1) == chunkname .. ":" then return nil, (msg:gsub("%s*\n%s*", " ")) end
    return nil, named(msg)
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
