-- attngen info: the projections' parameters (the tutorials' MHA, MQA and
-- GQA counts), KV-cache bytes per token in every storage type, FLOPs per
-- token, the table and --json output, and its one-line errors.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local info = require("info")
local json = require("dkjson")

describe("info", function()
  local function shape(hq, hkv, d, dv) return { hq = hq, hkv = hkv, d = d, dv = dv or d } end

  it("counts the tutorials' parameters at width 512 with 8 heads of 64", function()
    assert.equal(1050624, info.params(shape(8, 8, 64), 512).with_bias)
    assert.equal(590976, info.params(shape(8, 1, 64), 512).with_bias)
    assert.equal(787968, info.params(shape(8, 4, 64), 512).with_bias)
    assert.equal(4 * 512 * 512, info.params(shape(8, 8, 64), 512).without_bias)
  end)

  it("gives each projection its own widths (D != Dv, GQA)", function()
    local p = info.params(shape(4, 2, 32, 16), 100)
    assert.same({ weights = 100 * 128, bias = 128 }, p.q)
    assert.same({ weights = 100 * 64, bias = 64 }, p.k)
    assert.same({ weights = 100 * 32, bias = 32 }, p.v)
    assert.same({ weights = 64 * 100, bias = 100 }, p.o)
  end)

  it("counts KV-cache bytes per token in every storage type", function()
    local bytes = {}
    for _, c in ipairs(info.cache_bytes(shape(32, 8, 128))) do bytes[c.name] = c.per_token end
    assert.same({ f32 = 8192, bf16 = 4096, f16 = 4096, q8_0 = 2176, q4_0 = 1152 }, bytes)
    local odd = {}
    for _, c in ipairs(info.cache_bytes(shape(4, 4, 80, 64))) do odd[c.name] = c.per_token end
    assert.equal(4 * 144 * 2, odd.f16)
    assert.is_nil(odd.q8_0) -- 80 values are not whole blocks of 32
    assert.is_nil(odd.q4_0)
  end)

  it("counts one token's FLOPs over the keys it sees", function()
    local s = shape(32, 8, 128)
    local p = info.params(s, 4096)
    local f = info.flops({}, s, p, 4096)
    assert.equal(2 * 32 * 4096 * 256, f.attention)
    assert.equal(2 * p.without_bias, f.projections)
    assert.equal(f.attention + f.projections, f.total)
    assert.equal(2 * 32 * 1024 * 256, info.flops({ window = { left = 1023, right = 0 } }, s, p, 4096).attention)
    assert.equal(2 * 32 * 100 * 256, info.flops({ window = { left = 1023, right = 0 } }, s, p, 100).attention)
  end)

  it("counts the learned tables beside the projections: T5's relative table and the sinks", function()
    local s = shape(8, 8, 64)
    assert.same({}, info.tables({}, s))
    local t5 = info.tables({ rel_bias = { kind = "t5", buckets = 32, max_distance = 128 } }, s)
    assert.equal(1, #t5)
    assert.equal(32 * 8, t5[1].count)
    local clipped = info.tables({ rel_bias = { kind = "clipped", max_distance = 4 }, sinks = true }, s)
    assert.same({ "rel_table", "sinks" }, { clipped[1].name, clipped[2].name })
    assert.same({ 9 * 8, 8 }, { clipped[1].count, clipped[2].count })
    local code, out = helper.attngen({ "info", "t5_small_encoder" })
    assert.equal(0, code)
    assert.truthy(out:find("rel_table  256 learned values (32 buckets x 8 heads", 1, true), out)
  end)

  it("groups digits in threes", function()
    assert.equal("1,050,624", info.grouped(1050624))
    assert.equal("512", info.grouped(512))
    assert.equal("1,000", info.grouped(1000))
  end)

  describe("the command", function()
    it("prints the table for a preset", function()
      local code, out = helper.attngen({ "info", "llama3_8b" })
      assert.equal(0, code)
      assert.truthy(out:find("32 query heads, 8 kv heads, head dims 128 / 128", 1, true), out)
      assert.truthy(out:find("41,953,280 with biases, 41,943,040 without", 1, true), out)
      assert.truthy(out:find("q8_0  2,176 bytes", 1, true), out)
    end)

    it("prints one JSON object with --json, and takes --d-model, --seq and --set", function()
      local code, out = helper.attngen({ "info", "gpt2", "--json", "--d-model", "512", "--seq", "100",
        "--set", "heads_q=8", "--set", "heads_kv=4", "--set", "head_dim=64" })
      assert.equal(0, code)
      local r = json.decode(out)
      assert.equal(787968, r.params.with_bias)
      assert.equal(100, r.seq)
      assert.equal(2 * 8 * 100 * 128, r.flops_per_token.attention)
      assert.equal("q4_0", r.kv_cache[5].name)
      assert.equal(4 * 128 * 18 / 32, r.kv_cache[5].per_token)
    end)

    it("describes a linear config's state instead of a cache", function()
      local code, out = helper.attngen({ "info", "linear_transformer", "--json" })
      assert.equal(0, code)
      local r = json.decode(out)
      assert.is_nil(r.kv_cache)
      assert.equal(8 * (64 * 64 + 64) * 4, r.state_bytes)
    end)

    it("fails in one line on bad input", function()
      for _, args in ipairs({
        { "info", "llama3_8b", "--seq", "0" },
        { "info", "llama3_8b", "--d-model", "x" },
        { "info", "bahdanau_rnnsearch" },
        { "info", "no_such_preset" },
      }) do
        local code, out, err = helper.attngen(args)
        assert.equal(2, code, table.concat(args, " "))
        assert.equal("", out)
        assert.equal(1, #helper.lines(err), err)
        assert.equal("attngen: ", err:sub(1, 9))
      end
    end)
  end)
end)
