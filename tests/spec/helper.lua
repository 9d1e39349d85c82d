--- Shared by the busted specs: puts generator/ on package.path (so a spec
-- can require("schema") etc.) and offers small helpers for files, temporary
-- folders and running the CLI.
--
-- A spec loads it with
--   local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
-- which works from the repository root (how the runner starts busted) and
-- from tests/spec.

local M = {}

--- The folder of this file, made absolute against $PWD when relative.
local function this_dir()
  local src = debug.getinfo(1, "S").source
  local dir = src:sub(1, 1) == "@" and src:match("^@(.-)/?[^/]*$") or ""
  if dir == "" then dir = "." end
  if dir:sub(1, 1) ~= "/" then
    local cwd = os.getenv("PWD") or "."
    dir = dir == "." and cwd or (cwd .. "/" .. dir)
  end
  return dir
end

--- Normalizes "a/b/../c/./d" to "a/c/d".
local function normalize(p)
  local parts = {}
  for part in p:gmatch("[^/]+") do
    if part == ".." and #parts > 0 and parts[#parts] ~= ".." then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return (p:sub(1, 1) == "/" and "/" or "") .. table.concat(parts, "/")
end

--- The repository root: two folders up from tests/spec.
M.root = normalize(this_dir() .. "/../..")

local gen = M.root .. "/generator/?.lua;" .. M.root .. "/generator/?/init.lua;"
if package.path:sub(1, #gen) ~= gen then package.path = gen .. package.path end
-- the generator finds templates/ and configs/ through util.root
require("util").root = M.root

local path = require("pl.path")
local dir = require("pl.dir")

M.bin = M.root .. "/bin/attngen"

--- Quotes a string for /bin/sh.
function M.quote(s)
  s = tostring(s)
  if s:match("^[%w%./_%-=:,+]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

function M.read_file(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function M.write_file(p, content)
  local f = assert(io.open(p, "wb"))
  assert(f:write(content))
  assert(f:close())
  return p
end

function M.exists(p) return path.exists(p) ~= false end

--- A fresh, empty folder under the system's temporary folder.
function M.tmpdir()
  local name = os.tmpname() -- reserves a unique file; the folder takes its name
  os.remove(name)
  local d = name .. ".d"
  assert(dir.makepath(d))
  return d
end

--- The environment of a spec whose builds are incidental to what it tests
-- (the CLI's, plot's, the analysis page's and the tutorial's): its build
-- cache, and the compiler flags the cache compiles with.  tests/run.sh names
-- one cache for the whole run (ATTNGEN_TEST_CACHE, made empty at its start,
-- so the specs that run the same configs compile them and the runtime once,
-- and nothing from another run helps or interferes) and the flags
-- (ATTNGEN_TEST_CFLAGS: -O1 in make test, as these specs check the CLI, not
-- gcc's -O2 code, which the kernel tests run; nothing in make test-full);
-- run alone, a spec gets a private folder under tmp and the default flags.
-- Specs that look at the cache's entries keep a private one.
function M.build_env(tmp)
  local shared = os.getenv("ATTNGEN_TEST_CACHE")
  local env = { ATTNGEN_CACHE = (shared and shared ~= "") and shared or tmp .. "/cache" }
  local flags = os.getenv("ATTNGEN_TEST_CFLAGS")
  if flags and flags ~= "" then env.CFLAGS = flags end
  return env
end

function M.rmtree(d)
  if d and path.isdir(d) then dir.rmtree(d) end
end

--- Names in a folder (files and folders), sorted.
function M.ls(d)
  local names = {}
  for _, f in ipairs(dir.getfiles(d)) do names[#names + 1] = path.basename(f) end
  for _, f in ipairs(dir.getdirectories(d)) do names[#names + 1] = path.basename(f) end
  table.sort(names)
  return names
end

--- The exit code of os.execute on every Lua (5.1 gives a wait status).
local function exit_code(a, b, c)
  if type(a) == "number" then
    if a > 255 then return math.floor(a / 256) end
    return a
  end
  if b == "exit" then return c end
  return 128 + (c or 1)
end

--- Runs a shell command; returns exit code, stdout, stderr.
-- opts.env: { NAME = value } set for the command; opts.cwd: folder to run in.
function M.sh(cmd, opts)
  opts = opts or {}
  local out = os.tmpname()
  local err = os.tmpname()
  local prefix = ""
  if opts.env then
    local keys = {}
    for k in pairs(opts.env) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do prefix = prefix .. k .. "=" .. M.quote(opts.env[k]) .. " " end
    prefix = "env " .. prefix
  end
  local full = ("cd %s && %s%s >%s 2>%s"):format(M.quote(opts.cwd or M.root), prefix, cmd,
    M.quote(out), M.quote(err))
  local code = exit_code(os.execute(full))
  local stdout, stderr = M.read_file(out) or "", M.read_file(err) or ""
  os.remove(out)
  os.remove(err)
  return code, stdout, stderr
end

--- Runs bin/attngen with a list of arguments; returns exit code, stdout, stderr.
function M.attngen(args, opts)
  local parts = { M.quote(M.bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = M.quote(a) end
  return M.sh(table.concat(parts, " "), opts)
end

--- The lines of a text (without the newlines).
function M.lines(s)
  local t = {}
  for line in s:gmatch("([^\n]*)\n") do t[#t + 1] = line end
  local rest = s:match("[^\n]+$")
  if rest then t[#t + 1] = rest end
  return t
end

--- Writes a config file into folder d and returns its path.
function M.config_file(d, name, src)
  return M.write_file(d .. "/" .. name .. ".lua", src)
end

--- Shallow copy of a table with some keys replaced: with(base, {k = v}).
-- A value of M.NIL removes the key.
M.NIL = setmetatable({}, { __tostring = function() return "nil" end })
function M.with(base, changes)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(changes or {}) do
    if v == M.NIL then t[k] = nil else t[k] = v end
  end
  return t
end

return M
