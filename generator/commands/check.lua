--- attngen check CONFIG: random inputs over a matrix of shapes, every ISA
-- this CPU runs, against the naive reference.
local tool = require("commands.tool")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("check", "Verify CONFIG's kernel against the naive reference on many shapes.")
  tool.common_options(c)
  c:flag("--quick", "A smaller matrix of shapes.")
  c:option("--isa", "Check only this ISA variant.")
  c:option("--seed", "Random seed.", "1"):convert(tonumber)
end

function M.run(args)
  local argv = {}
  tool.pass(argv, "--quick", args.quick)
  tool.pass(argv, "--isa", args.isa)
  tool.pass(argv, "--seed", tostring(args.seed))
  return tool.run("check", args, argv)
end

return M
