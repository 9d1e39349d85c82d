-- The house rule of 150 lines a function: the hand-written generator and
-- runtime, and the functions a few wide configs render (their micro-kernels
-- are unrolled by design and left out; scripts/long_functions.lua).
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local config = require("config")
local planner = require("planner")
local render = require("render")
local presets = require("presets")
local dir = require("pl.dir")
local long = dofile(helper.root .. "/scripts/long_functions.lua")

describe("function lengths", function()
  it("finds a long C function and a long Lua one, and leaves out one-line Lua functions", function()
    local body = ("    x++;\n"):rep(151)
    local c = long.long_text("static void f(int x)\n{\n" .. body .. "}\nstatic void g(void)\n{\n}\n", false)
    assert.same({ { name = "f", line = 2, lines = 151 } }, c)
    local lua = "local f = function() return 1 end\nlocal function g()\n" .. ("  y()\n"):rep(151) .. "end\n"
    assert.same({ { name = "g", line = 2, lines = 151 } }, long.long_text(lua, true))
    local kernel = "static void attn_x_qk_8x32_f32__avx512(void)\n{\n" .. body .. "}\n"
    assert.same({}, long.long_text(kernel, false, nil, true))
    assert.equal(1, #long.long_text(kernel, false))
  end)

  it("no hand-written function is over 150 lines but the AVX-512 module's table of spellings", function()
    -- the list may only shrink
    local found = {}
    for _, root in ipairs({ "generator", "scripts", "runtime", "bench", "tests" }) do
      for _, file in ipairs(dir.getallfiles(helper.root .. "/" .. root)) do
        if file:match("%.lua$") or file:match("%.c$") then
          for _, fn in ipairs(long.long(file)) do
            found[#found + 1] = file:sub(#helper.root + 2) .. " " .. fn.name
          end
        end
      end
    end
    table.sort(found)
    assert.same({ "generator/isa/avx512.lua build" }, found)
  end)

  it("no rendered function but a micro-kernel is over 150 lines", function()
    -- wide D in plain C (qpack), the decode unit's phases with every row class on AVX-512,
    -- a linear and a classic driver
    for _, name in ipairs({ "configs/test/t_d512.lua", "configs/test/t_mla.lua", "configs/llama3_8b.lua",
      "configs/test/t_linear_causal.lua", "configs/test/t_additive_wide.lua" }) do
      local cfg = assert(config.load(helper.root .. "/" .. name))
      for _, f in ipairs(render.kernel_files(planner.plan(cfg), presets.command(name))) do
        for _, fn in ipairs(long.long_text(f.text, false, nil, true)) do
          error(("%s: %s is %d lines"):format(name, fn.name, fn.lines))
        end
      end
    end
  end)
end)
