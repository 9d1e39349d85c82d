--- configs/: the manifest of presets.  Resolves a CONFIG argument (a path or
-- a preset name) and loads it with its --set overrides.
local path = require("pl.path")
local dir = require("pl.dir")
local config = require("config")
local schema = require("schema")
local util = require("util")

local M = {}

function M.dir() return util.root .. "/configs" end

--- Preset names (configs/*.lua), sorted.
function M.list()
  local names = {}
  for _, f in ipairs(dir.getfiles(M.dir(), "*.lua")) do
    names[#names + 1] = path.basename(f):gsub("%.lua$", "")
  end
  table.sort(names)
  return names
end

--- The first comment line of a preset: its one-line description.
function M.describe(name)
  local src = util.read_file(M.dir() .. "/" .. name .. ".lua") or ""
  return src:match("^%-%-%s*([^\n]*)") or ""
end

--- Resolves CONFIG to a file; returns file, display name (the preset name
-- for presets, so generated banners do not depend on the caller's path).
function M.resolve(arg)
  if path.isfile(arg) then
    local abs = path.abspath(arg)
    local pdir = path.abspath(M.dir())
    if path.dirname(abs) == pdir then return arg, path.basename(arg):gsub("%.lua$", "") end
    return arg, arg
  end
  if arg:match("^[%w_%-]+$") and path.isfile(M.dir() .. "/" .. arg .. ".lua") then
    return M.dir() .. "/" .. arg .. ".lua", arg
  end
  if arg:find("/") or arg:match("%.lua$") then
    return nil, ("%s: no such config file"):format(arg)
  end
  local names = M.list()
  local hint = schema.suggest(arg, names)
  return nil, ("unknown preset '%s'%s (presets: %s)"):format(arg,
    hint and (" (did you mean '" .. hint .. "'?)") or "", table.concat(names, ", "))
end

--- Parses the --set list of an argparse result into override triples.
function M.overrides(sets)
  local out = {}
  for _, text in ipairs(sets or {}) do
    local key, value = config.parse_override(text)
    if not key then return nil, value end
    out[#out + 1] = { key, value, text }
  end
  return out
end

--- Loads CONFIG with overrides; returns cfg, display name, or nil, err.
function M.load(arg, sets)
  local file, display = M.resolve(arg)
  if not file then return nil, display end
  local overrides, err = M.overrides(sets)
  if not overrides then return nil, err end
  local cfg, cerr = config.load(file, overrides)
  if not cfg then return nil, cerr end
  return cfg, display
end

--- The command line that regenerates a config's files.
function M.command(display, sets)
  local parts = { "attngen generate", util.shell_quote(display) }
  for _, s in ipairs(sets or {}) do parts[#parts + 1] = "--set " .. util.shell_quote(s) end
  return table.concat(parts, " ")
end

return M
