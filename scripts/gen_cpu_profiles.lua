--- Writes runtime/attn_cpu_profiles.h, the runtime's table of CPU profiles,
-- from generator/cpu/*.lua: lua scripts/gen_cpu_profiles.lua [OUT.h]
-- (default: the runtime's copy; make cpu-profiles).
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path
local util = require("util")
util.root = root
local cpu = require("cpu")

local out = arg[1] or (root .. "/" .. cpu.HEADER_PATH)
assert(util.write_atomic(out, cpu.render_header()) ~= nil)
