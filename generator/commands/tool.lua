--- Shared by run, check and bench: build a config's tools in the cache and
-- run one with the given arguments, passing its exit code through.
local build = require("build")
local presets = require("presets")
local util = require("util")

local M = {}

--- Adds the options every tool command takes.
function M.common_options(c)
  c:argument("config", "Config file or preset name.")
  c:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
end

--- Runs tool `name` ("run", "check", "bench") for args.config with argv.
function M.run(name, args, argv)
  local cfg, display = presets.load(args.config, args.set)
  if not cfg then return nil, display end
  local entry, err = build.ensure(cfg, display, args.set)
  if not entry then return nil, err end
  local parts = { util.shell_quote(entry .. "/attn_" .. name) }
  for _, a in ipairs(argv) do parts[#parts + 1] = util.shell_quote(tostring(a)) end
  io.stdout:flush()
  return util.execute(table.concat(parts, " "))
end

--- Appends "--flag value" to argv when value is set.
function M.pass(argv, flag, value)
  if value ~= nil and value ~= false then
    argv[#argv + 1] = flag
    if value ~= true then argv[#argv + 1] = value end
  end
end

return M
