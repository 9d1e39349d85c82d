--- attngen presets: the configs in configs/.
local presets = require("presets")

local M = {}

function M.add_to_parser(parser)
  parser:command("presets", "List the presets in configs/.")
end

function M.run()
  for _, name in ipairs(presets.list()) do
    print(("%-24s %s"):format(name, presets.describe(name)))
  end
  return 0
end

return M
