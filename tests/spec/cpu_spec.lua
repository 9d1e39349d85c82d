-- The CPU profiles (generator/cpu/): every module has every field, valid;
-- the runtime's table (runtime/attn_cpu_profiles.h) is their fresh rendering;
-- a bad module is refused with a message that names it.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local cpu = require("cpu")
local isa = require("isa")

describe("CPU profiles", function()
  it("every module in the list has every field, valid, and names itself", function()
    assert.truthy(#cpu.order >= 2)
    for _, name in ipairs(cpu.order) do
      local p = assert(cpu.get(name))
      assert.equal(name, p.name)
      for _, f in ipairs(cpu.FIELDS) do
        assert.is_not_nil(p[f[1]], name .. " lacks " .. f[1])
        assert.truthy(f[2](p[f[1]]), name .. "." .. f[1])
      end
      assert.equal("table", type(p.match))
      assert.truthy(p.l2_bytes > p.l1d_bytes, name)
    end
  end)

  it("lists every module of generator/cpu and ends with generic, which matches every CPU", function()
    local listed = {}
    for _, n in ipairs(cpu.order) do listed[n] = true end
    for file in require("lfs").dir(helper.root .. "/generator/cpu") do
      local n = file:match("^(.+)%.lua$")
      if n and n ~= "init" then assert.truthy(listed[n], file .. " is not in cpu.order") end
    end
    assert.equal("generic", cpu.order[#cpu.order])
    assert.same({}, cpu.generic().match)
  end)

  it("matches CPUs by vendor, family range and a known ISA", function()
    for _, p in ipairs(cpu.all()) do
      local m = p.match
      if m.vendor then assert.equal(12, #m.vendor) end
      if m.isa then assert.truthy(isa.get(m.isa)) end
    end
    assert.same({ 0x19, 0x19 }, cpu.get("zen4").match.family)
    assert.equal("GenuineIntel", cpu.get("intel").match.vendor)
  end)

  it("the runtime's table is fresh (make cpu-profiles)", function()
    local committed = helper.read_file(helper.root .. "/" .. cpu.HEADER_PATH)
    assert.equal(cpu.render_header(), committed)
  end)

  it("renders every profile, first match first, with every field", function()
    local text = cpu.render_header()
    local at = 0
    for _, p in ipairs(cpu.all()) do
      local i = text:find('.name = "' .. p.name .. '"', 1, true)
      assert.truthy(i and i > at, p.name)
      at = i
    end
    for _, f in ipairs(cpu.FIELDS) do
      if f[3] then assert.truthy(text:find("." .. f[1] .. " = ", 1, true), f[1]) end
    end
    assert.truthy(text:find(".decode_prefetch = ATTN_PREFETCH_NONE", 1, true))
  end)

  it("refuses a module with a missing, invalid or unknown field", function()
    local function variant(change)
      local p = {}
      for k, v in pairs(cpu.generic()) do p[k] = v end
      for k, v in pairs(change) do p[k] = v end
      return p
    end
    local function refused(change, pattern)
      local ok, err = pcall(cpu.check, variant(change))
      assert.is_false(ok)
      assert.truthy(tostring(err):find(pattern, 1, true), tostring(err))
    end
    refused({ decode_key_pairs = 1 }, "decode_key_pairs = 1 is not valid")
    refused({ decode_prefetch = "l3" }, "decode_prefetch = l3 is not valid")
    refused({ decode_stream_rows = 5 }, "decode_stream_rows = 5 is not valid")
    refused({ l1d_bytes = 1000 }, "l1d_bytes = 1000 is not valid")
    refused({ prefetch_distance = 8 }, "unknown field 'prefetch_distance'")
    refused({ match = { vendor = "AMD" } }, "match.vendor")
    refused({ match = { family = { 0x1a, 0x19 } } }, "match.family")
    refused({ match = { isa = "sve" } }, "match.isa 'sve' is not an ISA")
    local p = variant({})
    p.bf16_dot = nil
    local ok, err = pcall(cpu.check, p)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("CPU profile 'generic' lacks bf16_dot", 1, true))
  end)

  it("an unknown profile name is an error listing the known ones", function()
    local p, err = cpu.get("zen9")
    assert.is_nil(p)
    assert.truthy(err:find("unknown CPU profile 'zen9' (known: zen5, zen4, intel, generic)", 1, true))
  end)
end)
