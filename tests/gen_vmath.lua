--- Writes the vector math of every vector ISA, exported for its accuracy
-- test (templates/vmath_test.c.tmpl): lua tests/gen_vmath.lua OUT.c
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path
local util = require("util")
util.root = root
local schema = require("schema")
local planner = require("planner")
local render = require("render")

local cfg = assert(schema.normalize({ name = "vmath", heads_q = 1, head_dim = 16, softcap = 1.0 }))
local plan = planner.plan(cfg)
local text = render.fragment("vmath_test.c.tmpl", plan, { with_tanh = true }) .. "\n"
assert(util.write_atomic(arg[1], text) ~= nil)
