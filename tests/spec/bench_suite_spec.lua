-- bench/suite.lua, the script behind `make bench`, without timing anything:
-- its command line (a mistake is one line on stderr and exit code 2, before
-- any file is written) and --replot, which redraws the plot from a
-- results.json (gnuplot; #slow, under LuaJIT only).
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")

local EXIT_USAGE = 2

--- Runs the suite with a list of arguments (LuaJIT, as make bench does).
local function suite(args)
  local parts = { "luajit", helper.quote(helper.root .. "/bench/suite.lua") }
  for _, a in ipairs(args) do parts[#parts + 1] = helper.quote(a) end
  return helper.sh(table.concat(parts, " "), { env = { ATTNGEN_ROOT = helper.root } })
end

describe("bench suite command line", function()
  local d
  before_each(function() d = helper.tmpdir() end)
  after_each(function() helper.rmtree(d) end)

  local CASES = {
    { "an unknown section", { "--only", "prefill,nonsense" }, 'unknown section "nonsense" %(sections: prefill,' },
    { "--only without sections", { "--only" }, "^usage: " },
    { "an unknown section, listing the serving one", { "--only", "serve" },
      'unknown section "serve" %(sections: .*,options,serving,sweep%)' },
    { "an unknown option", { "--fast" }, "^usage: " },
    { "--out without a folder", { "--out" }, "^usage: " },
  }
  for _, c in ipairs(CASES) do
    it("refuses " .. c[1] .. " with one line and writes nothing", function()
      local args = { "--out", d .. "/out" }
      for _, a in ipairs(c[2]) do args[#args + 1] = a end
      local code, out, err = suite(args)
      assert.are.equal(EXIT_USAGE, code)
      assert.are.equal("", out)
      assert.are.equal(1, #helper.lines(err), err)
      assert.truthy(err:match(c[3]), err)
      assert.is_false(helper.exists(d .. "/out"))
    end)
  end

  it("--replot without results says so", function()
    local code, out, err = suite({ "--replot", "--out", d })
    assert.are.equal(EXIT_USAGE, code)
    assert.are.equal("", out)
    assert.truthy(err:match("^attngen: .*results%.json: no results to plot\n$"), err)
  end)
end)

describe("bench suite --replot #slow", function()
  it("draws prefill.svg from a results.json's sweep", function()
    local d = helper.tmpdir()
    local function sweep(l, gflops)
      return { name = ("sweep L=%d"):format(l), data = { threads = 1,
        results = { { impl = "avx2", gflops = gflops, peak_gflops = 95 } } } }
    end
    local json = require("dkjson")
    helper.write_file(d .. "/results.json", json.encode({ isa = "avx2",
      runs = { sweep(256, 40), sweep(1024, 70), { name = "prefill D=128", data = { results = {} } } } }))
    local code, out, err = suite({ "--replot", "--out", d })
    assert.are.equal(0, code, err)
    assert.truthy(out:match("wrote .*prefill%.svg"), out)
    local svg = helper.read_file(d .. "/prefill.svg") or ""
    assert.truthy(svg:match("<svg"), "not an SVG")
    assert.truthy(svg:match("AVX2 FMA peak %(95%)"), "no peak line")
    helper.rmtree(d)
  end)
end)
