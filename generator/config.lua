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
M.MAX_MATCH_STEPS = 1e8             -- worst-case steps of one pattern search (~0.1 s)
M.CLOCK_EVERY = 128                 -- instructions between two looks at the CPU time

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

-- Pattern searches run in C, where the hook cannot stop them, and Lua's
-- matcher backtracks: ("x"):rep(6e4):find(".-.-.-y") would run for days.
-- Before a search, a bound on its steps is computed from the pattern and
-- the subject's length n: an item repeated with *, + or - (and a %b, and a
-- back-reference %1..%9) can retry the rest of the pattern at each of n + 1
-- places, a ? at two; each try costs at most the pattern's length, and an
-- unanchored search (and every gmatch and gsub) starts at n + 1 places.
-- Searches over the bound are refused.  Only string.byte and arithmetic are
-- used here: the config may have replaced the fields of its string table.
local byte = string.byte
local B_PCT, B_OPEN, B_CLOSE, B_LB, B_RB = byte("%()[]", 1, 5)
local B_CARET, B_DOLLAR, B_STAR, B_PLUS, B_MINUS, B_QMARK = byte("^$*+-?", 1, 6)
local B_0, B_9, B_b, B_f = byte("09bf", 1, 4)

--- Index just past the set "[...]" that starts at i (Lua's classEnd rules).
local function set_end(p, i, m)
  local j = i + 1
  if byte(p, j) == B_CARET then j = j + 1 end
  repeat -- the first character of a set is never its end: "[]]" is a set
    if j > m then return j end
    if byte(p, j) == B_PCT then j = j + 1 end
    j = j + 1
  until byte(p, j) == B_RB
  return j + 1
end

local function match_steps(p, n, every_start)
  local m = #p
  local steps, i = (m + 1) * 1.0, 1 -- a float: Lua 5.4's integers would wrap around
  local anchored = byte(p, 1) == B_CARET
  if anchored then i = 2 end
  if every_start or not anchored then steps = steps * (n + 1) end
  while i <= m and steps <= M.MAX_MATCH_STEPS do
    local c, single = byte(p, i), true
    if c == B_PCT then
      local d = byte(p, i + 1)
      if d == B_b then
        steps, i, single = steps * (n + 1), i + 4, false
      elseif d == B_f then
        i, single = set_end(p, i + 2, m), false
      elseif d and d >= B_0 and d <= B_9 then
        steps, i, single = steps * (n + 1), i + 2, false
      else
        i = i + 2
      end
    elseif c == B_LB then
      i = set_end(p, i, m)
    elseif c == B_OPEN or c == B_CLOSE or (c == B_DOLLAR and i == m) then
      i, single = i + 1, false
    else
      i = i + 1
    end
    if single then
      local q = byte(p, i)
      if q == B_STAR or q == B_PLUS or q == B_MINUS then
        steps, i = steps * (n + 1), i + 1
      elseif q == B_QMARK then
        steps, i = steps * 2, i + 1
      end
    end
  end
  return steps
end

--- Refuses a search of `pattern` in `str` whose bound is over the budget.
-- Arguments of the wrong type are left to the library's own errors.
local function check_search(what, str, pattern, every_start, plain)
  local ts, tp = type(str), type(pattern)
  if (ts ~= "string" and ts ~= "number") or (tp ~= "string" and tp ~= "number") then return end
  local n, p = #tostring(str), tostring(pattern)
  local steps = plain and (n + 1.0) * (#p + 1) or match_steps(p, n, every_start)
  if steps > M.MAX_MATCH_STEPS then
    error(("%s: pattern too complex for a subject of %d bytes (a search could take more than %.3g "
      .. "steps)"):format(what, n, M.MAX_MATCH_STEPS), 3)
  end
  if steps > 1e5 then M.heavy_call = true end -- the hook then looks at the clock at once
end

local function safe_find(str, pattern, init, plain)
  check_search("string.find", str, pattern, false, plain)
  return string.find(str, pattern, init, plain)
end

local function safe_match(str, pattern, init)
  check_search("string.match", str, pattern, false)
  return string.match(str, pattern, init)
end

local function safe_gmatch(str, pattern)
  -- all the iterator's calls together search from each start at most once
  check_search("string.gmatch", str, pattern, true)
  return string.gmatch(str, pattern)
end

local function safe_gsub(str, pattern, repl, n)
  check_search("string.gsub", str, pattern, true)
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

-- table.sort compares in C; with the default comparison (or a library
-- function as the comparison), sorting many long strings takes seconds the
-- hook cannot see.  Each comparison goes through a Lua function instead, so
-- that the instruction and time budgets see every step.
local function less(a, b) return a < b end
local function safe_sort(list, comp)
  if comp ~= nil and type(comp) ~= "function" then return table.sort(list, comp) end -- its own error
  local f = comp or less
  table.sort(list, function(a, b) return f(a, b) end)
end

-- The only globals a config sees: pure functions over data.
local function sandbox_env(safe_string)
  local function copy(t, names)
    local r = {}
    for _, n in ipairs(names) do r[n] = t[n] end
    return r
  end
  local tbl = copy(table, { "insert", "remove" })
  tbl.concat, tbl.sort = safe_concat, safe_sort
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
  for _, n in ipairs({ "byte", "char", "len", "lower", "reverse", "sub", "upper" }) do
    s[n] = string[n]
  end
  s.rep, s.gsub, s.format = safe_rep, safe_gsub, safe_format
  s.find, s.match, s.gmatch = safe_find, safe_match, safe_gmatch
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
  -- Lua 5.4 hands a parser's "C stack overflow" (deeply nested source) to
  -- the message handler in force, the CLI's traceback or a test runner's:
  -- the source is compiled under a handler that keeps the message as it is.
  local function compile()
    if setfenv then -- LuaJIT, Lua 5.1
      local f, e = loadstring(src, "=" .. PLACEHOLDER) -- luacheck: ignore 113
      if f then setfenv(f, env) end
      return f, e
    end
    return load(src, "=" .. PLACEHOLDER, "t", env)
  end
  local compiled, fn, err = xpcall(compile, function(m) return m end)
  if not compiled then fn, err = nil, fn end
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
    if (steps % M.CLOCK_EVERY == 0 or M.heavy_call) and os.clock() - start > M.MAX_SECONDS then
      stop(string.format("config runs too long (more than %g s)", M.MAX_SECONDS))
    end
    M.heavy_call = false
    if collectgarbage("count") - base_kb > M.MAX_MEMORY_KB then stop("config uses too much memory") end
  end

  -- Strings share one metatable whose __index is the real string library;
  -- point it at the safe copy while the config runs.
  local smeta = getmetatable("")
  local saved_index = smeta.__index
  smeta.__index = safe_string

  local jit_was_on = jit and jit.status and jit.status()
  if jit then jit.off() end -- hooks do not fire in compiled traces
  -- LuaJIT has one hook for all threads: the host's (a profiler, a
  -- coverage tool) is put back afterwards
  local host_hook, host_mask, host_count = debug.gethook()
  base_kb = collectgarbage("count")
  M.heavy_call = false
  debug.sethook(co, hook, "", 1)
  local ok, res = coroutine.resume(co)
  debug.sethook(co)
  if type(host_hook) == "function" then debug.sethook(host_hook, host_mask, host_count) end
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
  -- the kind first: it decides which keys the other overrides may name
  for _, o in ipairs(overrides or {}) do
    if o[1] == "kind" then raw.kind = o[2] end
  end
  local keys, order = schema.keys_of(raw.kind or "sdpa")
  for _, o in ipairs(overrides or {}) do
    local key, value = o[1], o[2]
    if not keys[key] then
      local hint = schema.suggest(key, order)
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
