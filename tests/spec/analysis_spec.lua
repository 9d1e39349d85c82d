-- docs/analysis.md: its block of commands, run as the page writes it (only
-- bin/attngen made absolute and the pictures sent to a folder of the test's
-- through IMG), so the page cannot drift from what attngen does.  #slow: it
-- compiles GPT-2's kernel with weights and entropy, and the mask tool.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local npy = require("npy")

--- The page's text and its first ```sh block.
local function page_block()
  local page = assert(helper.read_file(helper.root .. "/docs/analysis.md"))
  local block = page:match("```sh\n(.-)```")
  return page, assert(block, "docs/analysis.md has no ```sh block")
end

describe("docs/analysis.md", function()
  it("names each picture its commands write, and each is checked in under docs/img", function()
    local page, block = page_block()
    local n = 0
    for name in block:gmatch("%$IMG/([%w_]+%.svg)") do
      n = n + 1
      assert.truthy(page:find("(img/" .. name .. ")", 1, true), name .. " is not shown on the page")
      assert.truthy(helper.exists(helper.root .. "/docs/img/" .. name), "docs/img/" .. name .. " is missing")
    end
    assert.equal(7, n)
  end)
end)

describe("docs/analysis.md's commands #slow", function()
  local tmp
  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  it("run as written and draw every picture; the entropy is that of causal rows", function()
    local _, block = page_block()
    local script = block:gsub("bin/attngen", helper.quote(helper.bin))
    helper.write_file(tmp .. "/page.sh", "set -e\n" .. script)
    assert(require("pl.dir").makepath(tmp .. "/img"))
    local env = helper.build_env(tmp)
    env.IMG, env.ATTNGEN_TUNE_DB = tmp .. "/img", "none"
    local code, _, err = helper.sh("sh page.sh", { cwd = tmp, env = env })
    assert.equal(0, code, err)
    for name in block:gmatch("%$IMG/([%w_]+%.svg)") do
      local svg = helper.read_file(tmp .. "/img/" .. name)
      assert.truthy(svg and svg:find("<svg", 1, true), name)
    end
    -- e1.npy: [1][12][11], in nats; causal row i sees i + 1 keys: 0 <= E <= ln(i + 1), row 0 exactly 0
    local e = assert(npy.read_f32(tmp .. "/e1.npy"))
    assert.same({ 1, 12, 11 }, e.shape)
    for h = 0, 11 do
      assert.equal(0, npy.at(e, h * 11))
      for i = 1, 10 do
        local x = npy.at(e, h * 11 + i)
        assert.truthy(x > 0 and x <= math.log(i + 1) + 1e-5, ("head %d row %d: %g"):format(h, i, x))
      end
    end
  end)
end)
