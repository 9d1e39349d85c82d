--- attngen generate CONFIG... [-o DIR] [--set key=value]...
local path = require("pl.path")
local kernel_files = require("kernel_files")
local presets = require("presets")
local util = require("util")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("generate", "Write <name>.h and <name>.c for each config.")
  c:argument("config", "Config file or preset name."):args("+")
  c:option("-o --output", "Output folder.", ".")
  c:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
  c:flag("-q --quiet", "Print nothing on success.")
end

function M.run(args)
  -- load and render everything first: nothing is written unless all configs are good
  local outputs, names = {}, {}
  for _, arg in ipairs(args.config) do
    local cfg, display = presets.load(arg, args.set)
    if not cfg then return nil, display end
    if names[cfg.name] then
      return nil, ("%s: config name '%s' is used twice (also by %s); each config needs its own name")
        :format(arg, cfg.name, names[cfg.name])
    end
    names[cfg.name] = arg
    local files, ferr = kernel_files.render(cfg, display, args.set)
    if not files then return nil, ferr end
    for _, f in ipairs(files) do outputs[#outputs + 1] = f end
  end
  -- a destination that is a folder (or a device) fails before anything is written
  for _, f in ipairs(outputs) do
    local dest = args.output .. "/" .. f.name
    if path.exists(dest) and not path.isfile(dest) then
      return nil, ("%s: exists and is not a regular file; not replacing it"):format(dest)
    end
  end
  local ok, err = util.makepath(args.output)
  if not ok then return nil, err end
  local files = {}
  for _, f in ipairs(outputs) do files[#files + 1] = { path = args.output .. "/" .. f.name, text = f.text } end
  local wrote, werr = util.write_all(files, args.quiet)
  if not wrote then return nil, werr end
  return 0
end

return M
