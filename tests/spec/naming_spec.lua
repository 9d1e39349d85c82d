-- Function names: every builder's output parses back (the name is the spec),
-- and the names in generated C parse back to their config, op and ISA.
dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local naming = require("naming")
local schema = require("schema")
local planner = require("planner")
local render = require("render")

local ISAS = { "avx512", "avx2", "neon", "scalar" }

-- config names, ordinary and adversarial (every one a valid C identifier
-- that the schema accepts)
local NAMES = { "gpt2", "llama3_8b", "x", "_", "__", "A1", "attn", "fwd", "kernel", "qk", "pv", "a_b",
  "a__b", "my_fwd", "my_kernel", "x_fwd__avx2", "a_qk_1x2_", "b_pv_3x4__avx2", "qk_1x2", "t_fwd_",
  "x__", "_fwd", "z_kernel_fwd", "fwd__scalar", "a_qk_1x2", "n_pv_8x512", ("a"):rep(64) }

describe("naming", function()
  it("the test names are valid config names", function()
    for _, name in ipairs(NAMES) do
      assert.truthy(schema.normalize({ name = name, heads_q = 1, head_dim = 1 }), name)
    end
  end)

  it("builds the documented shapes", function()
    assert.equal("attn_gpt2_fwd", naming.entry("gpt2"))
    assert.equal("attn_gpt2_kernel", naming.kernel("gpt2"))
    assert.equal("attn_gpt2_fwd__avx2", naming.variant("gpt2", "avx2"))
    assert.equal("attn_gpt2_qk_6x16__avx2", naming.qk("gpt2", 6, 16, "avx2"))
    assert.equal("attn_gpt2_pv_3x64__neon", naming.pv("gpt2", 3, 64, "neon"))
  end)

  describe("round trip through parse", function()
    it("entry", function()
      for _, name in ipairs(NAMES) do
        assert.same({ config = name, op = "fwd" }, naming.parse(naming.entry(name)), name)
      end
    end)

    it("kernel", function()
      for _, name in ipairs(NAMES) do
        assert.same({ config = name, op = "kernel" }, naming.parse(naming.kernel(name)), name)
      end
    end)

    it("variant", function()
      for _, name in ipairs(NAMES) do
        for _, isa in ipairs(ISAS) do
          assert.same({ config = name, op = "fwd", isa = isa }, naming.parse(naming.variant(name, isa)),
            naming.variant(name, isa))
        end
      end
    end)

    it("qk and pv micro-kernels", function()
      for _, name in ipairs(NAMES) do
        for _, isa in ipairs(ISAS) do
          for _, shape in ipairs({ { 1, 1 }, { 1, 16 }, { 6, 64 }, { 8, 512 }, { 12, 4096 } }) do
            local mr, nc = shape[1], shape[2]
            local fq = naming.qk(name, mr, nc, isa)
            assert.same({ config = name, op = "qk", mr = mr, nc = nc, isa = isa }, naming.parse(fq), fq)
            local fp = naming.pv(name, mr, nc, isa)
            assert.same({ config = name, op = "pv", mr = mr, nc = nc, isa = isa }, naming.parse(fp), fp)
          end
        end
      end
    end)

    it("every builder's names are distinct from every other's", function()
      local seen = {}
      for _, name in ipairs(NAMES) do
        local all = { naming.entry(name), naming.kernel(name) }
        for _, isa in ipairs(ISAS) do
          all[#all + 1] = naming.variant(name, isa)
          all[#all + 1] = naming.qk(name, 4, 16, isa)
          all[#all + 1] = naming.pv(name, 4, 16, isa)
        end
        for _, f in ipairs(all) do
          assert.is_nil(seen[f], "two things are named " .. f)
          seen[f] = true
        end
      end
    end)
  end)

  it("parse rejects what no builder makes", function()
    for _, s in ipairs({ "", "attn_", "attn__fwd_", "gpt2_fwd", "attn_gpt2", "attn_gpt2_qk_6x__avx2",
      "attn_gpt2_qk_ax16__avx2", "attn_gpt2_zz_6x16__avx2", "attn_gpt2_qk_6x16_avx2", "attn_gpt2_fwd_",
      "attn_gpt2_fwd__", "attn_gpt2_pack__avx2", "attn_gpt2_variants", "xattn_gpt2_fwd" }) do
      assert.is_nil(naming.parse(s), s)
    end
  end)

  describe("names in generated C", function()
    --- Every identifier attn_<name>_... in text that parses.
    local function parsed_names(text, name)
      local found = {}
      local prefix = "attn_" .. name .. "_"
      for id in text:gmatch("[%a_][%w_]*") do
        if id:sub(1, #prefix) == prefix then
          local p = naming.parse(id)
          if p then found[id] = p end
        end
      end
      return found
    end

    local function check_config(raw, display)
      local cfg = assert(schema.normalize(raw))
      local plan = planner.plan(cfg)
      local files = render.kernel_files(plan, "attngen generate " .. display)
      local c_text, h_text = files[2].text, files[1].text
      local found = parsed_names(c_text, cfg.name)
      local allowed_isa = {}
      for _, isa in ipairs(cfg.isa) do allowed_isa[isa] = true end
      local variants = {}
      for _, v in ipairs(plan.variants) do variants[v.name] = v end

      local n = 0
      for id, p in pairs(found) do
        n = n + 1
        assert.equal(cfg.name, p.config, id)
        if p.isa then
          assert.is_true(allowed_isa[p.isa] == true, id .. ": an ISA that is not in the config")
          local v = variants[p.isa]
          if p.op == "qk" then
            assert.equal(v.qk.nc, p.nc, id)
            assert.truthy(p.mr == v.qk.mr or p.mr == 1, id)
          elseif p.op == "pv" then
            assert.equal(cfg.head_dim_v, p.nc, id)
            assert.truthy(p.mr == v.pv.mr or p.mr == 1, id)
          else
            assert.equal("fwd", p.op, id)
          end
        else
          assert.truthy(p.op == "fwd" or p.op == "kernel", id)
        end
      end
      assert.is_true(n > 0)

      -- and every name the plan promises is there
      local want = { plan.entry, plan.kernel }
      for _, v in ipairs(plan.variants) do
        want[#want + 1] = v.fn
        for _, mr in ipairs(v.qk_rows) do want[#want + 1] = v.qk_fn(mr) end
        for _, mr in ipairs(v.pv_rows) do want[#want + 1] = v.pv_fn(mr) end
      end
      for _, f in ipairs(want) do assert.is_not_nil(found[f], f .. " is not in the generated C") end
      -- the header declares the entry, the kernel and the variants, nothing else that parses
      local hfound = parsed_names(h_text, cfg.name)
      for id, p in pairs(hfound) do
        assert.truthy(p.op == "fwd" or p.op == "kernel", id .. " in the header")
      end
      assert.is_not_nil(hfound[plan.entry])
      assert.is_not_nil(hfound[plan.kernel])
    end

    it("a test config with odd dims", function()
      check_config({ name = "t_odd_dims", heads_q = 3, head_dim = 59, head_dim_v = 72 }, "t_odd_dims")
    end)

    it("a config limited to two ISAs, with masks", function()
      check_config({ name = "two", heads_q = 4, heads_kv = 2, head_dim = 24, causal = true, sliding_window = 8,
        global_tokens = 2, padding = true, mask = "bool", isa = { "scalar", "avx2" } }, "two")
    end)

    it("a config whose name looks like a kernel name", function()
      check_config({ name = "a_qk_1x2_", heads_q = 2, head_dim = 8, isa = { "scalar", "avx512" } }, "weird")
      check_config({ name = "x_fwd__avx2", heads_q = 2, head_dim = 8, isa = { "neon" } }, "weird")
    end)
  end)
end)
