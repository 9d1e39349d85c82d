--- Entry point: sets the module path and runs the CLI under xpcall, so that
-- a bug prints "internal error" with a traceback instead of a raw Lua error.
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path

local cli = require("cli")
local code
local ok, err = xpcall(function() code = cli.main(arg) end, debug.traceback)
if not ok then
  io.stderr:write("attngen: internal error, please report it with the command you ran:\n", tostring(err), "\n")
  os.exit(70)
end
os.exit(code or 0)
