--- A config's generated files: plans the config (tile = "auto" takes its
-- tiles from the tuning file) and renders <name>.h and <name>.c.  Shared by
-- the commands that write or compile kernels (generate, vendor, and through
-- build.lua run, check and bench).
local planner = require("planner")
local presets = require("presets")
local render = require("render")
local tunedb = require("tunedb")

local M = {}

--- Plans and renders a config; returns the list of files (name, text) and
-- the plan, or nil and a one-line error.  A config with tile = "auto" takes
-- its tiles from the tuning file (tunedb; ATTNGEN_TUNE_DB=none: the
-- heuristic).  The banner's command leaves out -o: the text does not depend
-- on the folder.  command (optional) replaces that command (vendor: the
-- command that wrote the folder).
function M.render(cfg, display, sets, command)
  local popts, err = tunedb.plan_options(cfg)
  if not popts then return nil, err end
  local plan = planner.plan(cfg, popts)
  return render.kernel_files(plan, command or presets.command(display, sets)), plan
end

return M
