--- Small helpers shared by the generator: files, paths, processes, C literals.
local path = require("pl.path")
local dir = require("pl.dir")

local M = {}

--- Root of the attngen checkout (set by the CLI from the shim's location).
M.root = os.getenv("ATTNGEN_ROOT") or "."

function M.read_file(p)
  local f, err = io.open(p, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

--- A name that no concurrent process will pick: os.tmpname() reserves a
-- unique file in the system's temporary folder; we reuse its basename.
local function unique_suffix()
  local t = os.tmpname()
  os.remove(t)
  return (t:gsub(".*/", ""))
end
M.unique_suffix = unique_suffix

--- Writes `content` to `p` through a temporary file and a rename, so that a
-- reader never sees half a file.  Leaves `p` untouched when it already holds
-- exactly `content` (returns false, "unchanged").
function M.write_atomic(p, content)
  local old = M.read_file(p)
  if old == content then return false, "unchanged" end
  local tmp = p .. ".tmp." .. unique_suffix()
  local f, err = io.open(tmp, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(content)
  local cok, cerr = f:close()
  if not ok or not cok then
    os.remove(tmp)
    return nil, ("%s: %s"):format(p, tostring(werr or cerr))
  end
  local rok, rerr = os.rename(tmp, p)
  if not rok then
    os.remove(tmp)
    return nil, rerr
  end
  return true
end

--- Writes each {path = p, text = t} with write_atomic and prints "wrote p"
-- or "unchanged p" unless quiet.  Returns true, or nil and a one-line error
-- at the first file that cannot be written.
function M.write_all(files, quiet)
  for _, f in ipairs(files) do
    local wrote, werr = M.write_atomic(f.path, f.text)
    if wrote == nil then return nil, ("%s: cannot write: %s"):format(f.path, tostring(werr)) end
    if not quiet then print((wrote and "wrote " or "unchanged ") .. f.path) end
  end
  return true
end

function M.makepath(p)
  if path.isdir(p) then return true end
  -- another process may create it or a parent at the same moment, and then
  -- mkdir fails with "exists": retry, and accept the folder however it came
  local ok, err
  for _ = 1, 8 do
    ok, err = dir.makepath(p)
    if ok or path.isdir(p) then return true end
  end
  return nil, ("cannot create folder '%s': %s"):format(p, tostring(err))
end

--- The build cache: $ATTNGEN_CACHE, else $XDG_CACHE_HOME/attngen, else
-- ~/.cache/attngen.  The compiled tools (build.lua) and the tuning file
-- (tunedb.lua) live there.
function M.cache_dir()
  local c = os.getenv("ATTNGEN_CACHE")
  if c and c ~= "" then return c end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/attngen" end
  return (os.getenv("HOME") or "/tmp") .. "/.cache/attngen"
end

--- Quotes a string for /bin/sh.
function M.shell_quote(s)
  if s:match("^[%w%./_%-=:,+]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Runs a shell command; returns ok, output (stdout and stderr together),
-- and the exit code.  The exit status travels as a last line, since Lua
-- 5.1's popen():close() does not report it.
function M.run_capture(cmd)
  local p = io.popen("(" .. cmd .. ") 2>&1; echo \"@rc=$?\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)@rc=(%d+)%s*$")
  if not body then return false, out, -1 end
  return tonumber(rc) == 0, body, tonumber(rc)
end

--- Runs a command with its output on our terminal; returns its exit code.
function M.execute(cmd)
  local a, b, c = os.execute(cmd)
  if type(a) == "number" then -- Lua 5.1 / LuaJIT without 5.2 compat: raw wait status
    if a > 255 then return math.floor(a / 256) end
    return a
  end
  if b == "exit" then return c end
  return 128 + (c or 1) -- killed by a signal
end

--- A C float literal that round-trips the given number through float.
function M.c_float(x)
  if x ~= x then return "NAN" end
  if x == math.huge then return "INFINITY" end
  if x == -math.huge then return "-INFINITY" end
  local s = ("%.9g"):format(x)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s .. "f"
end

--- A C double literal that round-trips the given finite number.
function M.c_double(x)
  local s = ("%.17g"):format(x)
  for digits = 15, 16 do -- the shortest of these that reads back as x
    local t = ("%." .. digits .. "g"):format(x)
    if tonumber(t) == x then
      s = t
      break
    end
  end
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s
end

--- Stable iteration over a table's keys.
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

--- Serializes a plain value (numbers, strings, booleans, tables) as a Lua
-- literal with sorted keys: the canonical text of a config.
function M.serialize(v, indent)
  indent = indent or ""
  local t = type(v)
  if t == "string" then return ("%q"):format(v)
  elseif t == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
    for digits = 15, 16 do -- the shortest text that reads back as the same double (0.1, not 0.10000000000000001)
      local text = ("%." .. digits .. "g"):format(v)
      if tonumber(text) == v then return text end
    end
    return ("%.17g"):format(v)
  elseif t == "boolean" or t == "nil" then return tostring(v)
  elseif t == "table" then
    local n = #v
    local parts = {}
    for i = 1, n do parts[#parts + 1] = M.serialize(v[i], indent) end
    for _, k in ipairs(M.sorted_keys(v)) do
      if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then
        local key = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k
          or ("[" .. M.serialize(k) .. "]")
        parts[#parts + 1] = key .. " = " .. M.serialize(v[k], indent)
      end
    end
    return "{ " .. table.concat(parts, ", ") .. " }"
  end
  error("cannot serialize a " .. t, 2)
end

return M
