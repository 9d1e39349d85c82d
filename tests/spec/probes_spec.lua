-- The bench's peak probes (generator/probes.lua): each loop is its chains of
-- the ISA module's own spelling of the instruction, the table's operations a
-- step follow from the chains and lanes, and the file compiles warning-free
-- (C99, -Wpedantic) where the build's compiler is.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local isa = require("isa")
local int8 = require("isa.int8")
local probes = require("probes")

--- The body of the probe function `name` in the text (its braces).
local function body(text, name)
  local at = text:find("static void " .. name .. "(long iters)", 1, true)
  assert.truthy(at, name)
  return text:sub(at, text:find("\n}", at, true))
end

--- Whether each chain i < n steps as step(("a%d"):format(i)) in the loop.
local function assert_chains(b, n, step)
  for i = 0, n - 1 do
    local line = ("        a%d = %s;"):format(i, step(("a%d"):format(i)))
    assert.truthy(b:find(line, 1, true), line)
  end
  assert.falsy(b:find(("        a%d = "):format(n), 1, true), "more chains than " .. n)
end

describe("the peak probes", function()
  local text = probes.render()

  it("the FMA probes are FMA_CHAINS chains of each ISA's fma", function()
    for _, name in ipairs({ "avx512", "avx2", "neon" }) do
      local I = isa.get(name)
      local b = body(text, "attn_probe_fma__" .. name)
      assert_chains(b, probes.FMA_CHAINS, function(a) return I.fma(a, "b", "c") end)
      assert.truthy(b:find(I.set1("0.999999f"), 1, true))
      local entry = ("{ ATTN_PROBE_FMA, %s, attn_probe_fma__%s, %d }"):format(I.enum, name,
        2 * probes.FMA_CHAINS * I.lanes)
      assert.truthy(text:find(entry, 1, true), entry)
    end
  end)

  it("the bf16 dot probe is DOT_CHAINS chains of avx512bf16's pair dot", function()
    local I = isa.get("avx512bf16")
    local b = body(text, "attn_probe_bf16_dot__avx512bf16")
    assert_chains(b, probes.DOT_CHAINS, function(a) return I.dp.dot(a, "b", "b") end)
    assert.truthy(text:find(("{ ATTN_PROBE_BF16_DOT, ATTN_ISA_AVX512BF16, attn_probe_bf16_dot__avx512bf16, %d }")
      :format(4 * probes.DOT_CHAINS * I.lanes), 1, true))
  end)

  it("the int8 probes are the kernels' vpdpbusd and vpmaddubsw forms", function()
    local avx512, avx2 = isa.get("avx512"), isa.get("avx2")
    assert_chains(body(text, "attn_probe_int8_dp__avx512"), probes.DOT_CHAINS,
      function(a) return int8.dp_intrinsic(avx512.int8, 512) .. "(" .. a .. ", u, s)" end)
    assert_chains(body(text, "attn_probe_int8_dp__avx2"), probes.DOT_CHAINS,
      function(a) return int8.dp_intrinsic(avx2.int8, 256) .. "(" .. a .. ", u, s)" end)
    -- the fallback multiplies each chain's own accumulator: products of
    -- constants alone would be hoisted out of the loop
    local mad = body(text, "attn_probe_int8_mad__avx2")
    assert_chains(mad, probes.DOT_CHAINS, function(a) return int8.mad(a, "s", a) end)
    assert.falsy(mad:find("maddubs_epi16(u,", 1, true))
    assert.equal("_mm512_dpbusd_epi32", int8.dp_intrinsic(avx512.int8, 512))
    assert.equal("_mm256_dpbusd_avx_epi32", int8.dp_intrinsic(avx2.int8, 256))
    assert.truthy(text:find(("attn_probe_int8_dp__avx512, %d }"):format(2 * probes.DOT_CHAINS * 64), 1, true))
  end)

  it("the table ends with an entry whose loop is NULL", function()
    assert.truthy(text:find("{ ATTN_PROBE_FMA, ATTN_ISA_SCALAR, NULL, 0 } /* the end */\n};", 1, true))
  end)

  it("compiles warning-free as C99 with the bench's header", function()
    local tmp = helper.tmpdir()
    local src = tmp .. "/" .. probes.FILE
    helper.write_file(src, text)
    local cc = os.getenv("CC") or "cc"
    local code, _, err = helper.sh(("%s -std=c99 -O1 -Wall -Wextra -Wpedantic -Werror -I%s -I%s -c %s -o %s")
      :format(helper.quote(cc), helper.quote(helper.root .. "/runtime"), helper.quote(helper.root .. "/runtime/tools"),
        helper.quote(src), helper.quote(tmp .. "/probes.o")))
    helper.rmtree(tmp)
    assert.equal(0, code, err)
  end)
end)
