--- The command line: one module per subcommand (generator/commands/*.lua),
-- each exporting add_to_parser(parser) and run(args).  A command returns an
-- exit code, or nil and a one-line error that is printed as "attngen: ...".
local argparse = require("argparse")
local version = require("version")

local M = {}

M.EXIT_OK = 0
M.EXIT_FAIL = 1    -- the work ran and found a problem (a check failed)
M.EXIT_USAGE = 2   -- bad input: config, files, arguments
M.EXIT_INTERNAL = 70

M.commands = { "generate", "run", "check", "bench", "tune", "vendor", "import-hf", "presets", "plot", "info",
  "rollout" }

--- The module of a command: generator/commands/<name with - as _>.lua.
function M.module(name)
  return require("commands." .. name:gsub("-", "_"))
end

function M.parser()
  local parser = argparse("attngen", "Ahead-of-time generator of CPU attention kernels in C.")
    :epilog("CONFIG is a path to a Lua config or the name of a preset in configs/ (see 'attngen presets').")
  parser:command_target("command")
  parser:require_command(true)
  parser:flag("--version", "Print the version and exit."):action(function()
    print("attngen " .. version.string)
    os.exit(0)
  end)
  for _, name in ipairs(M.commands) do
    M.module(name).add_to_parser(parser)
  end
  return parser
end

--- Runs the CLI on an argument list; returns the exit code.
function M.main(argv)
  local parser = M.parser()
  local ok, args = parser:pparse(argv)
  if not ok then
    -- one line: argparse puts its "Did you mean ...?" on a line of its own
    local msg = tostring(args):gsub("%s*\n%s*", " ")
    io.stderr:write("attngen: ", msg, " (see 'attngen --help')\n")
    return M.EXIT_USAGE
  end
  local cmd = M.module(args.command)
  local code, err = cmd.run(args)
  if code == nil then
    io.stderr:write("attngen: ", tostring(err), "\n")
    return M.EXIT_USAGE
  end
  return code
end

return M
