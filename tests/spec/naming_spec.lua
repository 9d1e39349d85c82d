-- Function names: every builder's output parses back (the name is the spec),
-- and the names in generated C parse back to their config, op and ISA.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
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
    assert.equal("attn_qk_6x16_d64_f32__avx2", naming.micro("qk", { m = 6, n = 16, d = 64, isa = "avx2" }))
    assert.equal("attn_pv_3x64_bf16__neon", naming.micro("pv", { m = 3, n = 64, dtype = "bf16", isa = "neon" }))
    assert.equal("attn_qk_8x16_d128_f32_p32_pf__avx512",
      naming.micro("qk", { m = 8, n = 16, d = 128, isa = "avx512", fields = { "p32", "pf" } }))
    assert.equal("attn_dot_4x2_d64_q8_0_i8__avx2",
      naming.micro("dot", { m = 4, n = 2, d = 64, dtype = "q8_0", isa = "avx2", fields = { "i8" } }))
    assert.equal("attn_spvk_4x2_v96_f16__avx512",
      naming.micro("spvk", { m = 4, n = 2, v = 96, dtype = "f16", isa = "avx512" }))
    assert.equal("attn_sqk_4x2_d128v128_q8_0_i8_sc__avx2",
      naming.micro("sqk", { m = 4, n = 2, d = 128, v = 128, dtype = "q8_0", isa = "avx2", fields = { "i8", "sc" } }))
    assert.equal("attn_supd_2x1_v64_f32__neon", naming.micro("supd", { m = 2, n = 1, v = 64, isa = "neon" }))
    assert.equal("attn_sqbdot_3x2_d96_q4_0__avx512",
      naming.micro("sqbdot", { m = 3, n = 2, d = 96, dtype = "q4_0", isa = "avx512" }))
    assert.equal("attn_qpackdp_1x36_d71_bf16__avx512bf16",
      naming.micro("qpackdp", { m = 1, n = 36, d = 71, dtype = "bf16", isa = "avx512bf16" }))
    assert.equal("attn_prefetch_line_l2", naming.common("prefetch_line_l2"))
    assert.equal("attn_gpt2_sunit_4x1__avx512", naming.build("gpt2", "sunit", { m = 4, n = 1, isa = "avx512" }))
    assert.equal("attn_gpt2_k_row", naming.build("gpt2", "k_row"))
    assert.equal("attn_exp2_q4__avx512", naming.shared("exp2", "avx512", true))
    assert.equal("attn_hsum4__avx2", naming.shared("hsum4", "avx2"))
  end)

  it("refuses to build a name its op does not describe", function()
    assert.has_error(function() naming.build("x", "nope") end)
    assert.has_error(function() naming.build("x", "qk", { isa = "avx2", dtype = "f32" }) end) -- no shape
    assert.has_error(function() naming.build("x", "qk", { m = 1, n = 2, isa = "avx2" }) end) -- no dtype
    assert.has_error(function() naming.build("x", "qk", { m = 1, n = 2, dtype = "f32" }) end) -- no ISA
    assert.has_error(function() naming.build("x", "k_row", { isa = "avx2" }) end) -- takes none
    assert.has_error(function() naming.shared("nope", "avx2") end)
    assert.has_error(function() naming.build("x", "qk", { m = 1, n = 2, isa = "avx2", dtype = "f32" }) end) -- math
    assert.has_error(function() naming.micro("sunit", { m = 1, n = 2, isa = "avx2" }) end) -- a config's
    assert.has_error(function() naming.micro("qk", { m = 1, n = 2, isa = "avx2" }) end) -- no d
    assert.has_error(function() naming.micro("qk", { m = 1, n = 2, d = 8 }) end) -- no ISA
    assert.has_error(function() naming.micro("qk", { m = 1, n = 2, d = 8, isa = "avx2", fields = { "zz" } }) end)
    assert.has_error(function() naming.micro("qk", { m = 1, n = 2, d = 8, isa = "avx2", fields = { "pf", "p8" } }) end)
    assert.has_error(function() naming.common("nope") end)
  end)

  --- Every field combination an op takes, for one config name and ISA
  -- (none for a micro-kernel named by its math).
  local function examples(op, isa)
    local spec = naming.OPS[op]
    local out = {}
    if spec.math then return out end
    for _, with_isa in ipairs(spec.isa == "optional" and { false, true } or { spec.isa == true }) do
      for _, dtype in ipairs(spec.dtype and naming.DTYPES or { false }) do
        for _, shape in ipairs(spec.shape and { { 1, 1 }, { 6, 64 }, { 12, 4096 } } or { false }) do
          local t = { isa = with_isa and isa or nil, dtype = dtype or nil }
          if shape then t.m, t.n = shape[1], shape[2] end
          out[#out + 1] = t
        end
      end
    end
    return out
  end

  describe("round trip through parse", function()
    it("every op, every field it takes, every ISA and storage type", function()
      for _, name in ipairs(NAMES) do
        for op in pairs(naming.OPS) do
          for _, isa in ipairs(ISAS) do
            for _, t in ipairs(examples(op, isa)) do
              local f = naming.build(name, op, t)
              assert.same({ config = name, op = op, m = t.m, n = t.n, dtype = t.dtype, isa = t.isa },
                naming.parse(f), f)
            end
          end
        end
      end
    end)

    it("micro-kernels named by their math: every dims, storage type, field and ISA", function()
      local seen, n = {}, 0
      local FIELDS = { {}, { "p32" }, { "pf" }, { "i8" }, { "sc" }, { "i8", "sc" }, { "p8", "pf" },
        { "p64", "pf", "i8" } }
      for op, spec in pairs(naming.OPS) do
        if spec.math then
          for _, isa in ipairs(ISAS) do
            for _, dtype in ipairs(naming.DTYPES) do
              for _, shape in ipairs({ { 1, 1 }, { 6, 64 }, { 12, 4096 } }) do
                for _, fields in ipairs(FIELDS) do
                  local t = { m = shape[1], n = shape[2], dtype = dtype, isa = isa,
                    fields = fields[1] and fields or nil }
                  if spec.math:find("d") then t.d = 3 * shape[2] + 1 end
                  if spec.math:find("v") then t.v = shape[2] + 7 end
                  local f = naming.micro(op, t)
                  t.op = op
                  assert.same(t, naming.parse(f), f)
                  assert.is_nil(seen[f], "two things are named " .. f)
                  seen[f], n = true, n + 1
                end
              end
            end
          end
        end
      end
      assert.is_true(n > 1000)
      -- no config-scoped name parses as a micro-kernel's
      for _, name in ipairs(NAMES) do
        for op in pairs(naming.OPS) do
          for _, t in ipairs(examples(op, "avx2")) do
            assert.is_nil(seen[naming.build(name, op, t)])
          end
        end
      end
    end)

    it("common helpers", function()
      for op in pairs(naming.COMMON) do assert.same({ op = op }, naming.parse(naming.common(op))) end
    end)

    it("shared helpers", function()
      for op in pairs(naming.SHARED) do
        for _, isa in ipairs(ISAS) do
          assert.same({ op = op, isa = isa }, naming.parse(naming.shared(op, isa)))
          assert.same({ op = op, isa = isa, q4 = true }, naming.parse(naming.shared(op, isa, true)))
        end
      end
    end)

    it("every builder's names are distinct from every other's", function()
      local seen = {}
      for _, name in ipairs(NAMES) do
        for op in pairs(naming.OPS) do
          for _, t in ipairs(examples(op, "avx2")) do
            local f = naming.build(name, op, t)
            assert.is_nil(seen[f], "two things are named " .. f)
            seen[f] = true
          end
        end
      end
    end)
  end)

  it("parse rejects what no builder makes", function()
    for _, s in ipairs({ "", "attn_", "attn__fwd_", "gpt2_fwd", "attn_gpt2", "attn_gpt2_qk_6x__avx2",
      "attn_gpt2_qk_ax16_f32__avx2", "attn_gpt2_zz_6x16_f32__avx2", "attn_gpt2_qk_6x16_f32_avx2",
      "attn_gpt2_qk_6x16__avx2", "attn_gpt2_qk_6x16_f64__avx2", "attn_gpt2_fwd_", "attn_gpt2_fwd__",
      "attn_gpt2_k_row__avx2", "attn_gpt2_unit", "xattn_gpt2_fwd", "attn_exp2__sse",
      "attn_sqk_4x1_d64v64_f32_sc_i8__avx2", "attn_supd_4x1_d64_f32__avx2" }) do
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
      local micro = {} -- the micro-kernels, named by their math
      for id in c_text:gmatch("[%a_][%w_]*") do
        local p = id:sub(1, 5) == "attn_" and naming.parse(id)
        if p and p.m and not p.config then micro[id] = p end
      end
      local allowed_isa = {}
      for _, isa in ipairs(cfg.isa) do allowed_isa[isa] = true end
      local variants = {}
      for _, v in ipairs(plan.variants) do variants[v.name] = v end

      local n = 0
      for id, p in pairs(found) do
        n = n + 1
        assert.equal(cfg.name, p.config, id)
        assert.is_true(p.isa == nil or allowed_isa[p.isa] == true, id .. ": an ISA that is not in the config")
      end
      assert.is_true(n > 0)
      n = 0
      for id, p in pairs(micro) do
        n = n + 1
        if p.isa then
          assert.is_true(allowed_isa[p.isa] == true, id .. ": an ISA that is not in the config")
          local v = variants[p.isa]
          if p.op == "qk" then
            assert.equal(cfg.head_dim, p.d, id)
            -- a panel's columns, or (the prefill's narrow instance, MR rows) one vector of them
            assert.truthy(p.n == v.qk.nc or (v.qk_narrow and p.n == v.lanes and p.m == v.qk.mr), id)
            assert.truthy(p.m == v.qk.mr or p.m == v.qk_half or p.m == 1, id) -- a block, half a block (prefill), a row
          elseif p.op == "pv" then
            assert.equal(cfg.head_dim_v, p.n, id)
            assert.truthy(p.m >= 1 and p.m <= v.pv_rows[1], id) -- up to the widest (the decode path's)
          end
        end
      end
      assert.is_true(n > 0)

      -- every symbol the file defines is named by naming.lua: an identifier
      -- attn_... that is defined (followed by "(" at the start of a
      -- definition, or closing a typedef) parses
      for id in c_text:gmatch("static[%w_ ]-[%s%*](attn_[%w_]+)%(") do
        assert.is_not_nil(naming.parse(id), id .. " is defined but naming.lua cannot parse it")
      end
      for id in c_text:gmatch("}%s*(attn_[%w_]+);") do
        assert.is_not_nil(naming.parse(id), id .. " (a type) is not a name naming.lua parses")
      end

      -- and every name the plan promises is there
      local want = { plan.entry, plan.kernel }
      for _, v in ipairs(plan.variants) do
        want[#want + 1] = v.fn
        for _, mr in ipairs(v.qk_rows) do want[#want + 1] = v.qk_fn(mr) end
        if v.qk_narrow then want[#want + 1] = v.qk_fn(v.qk.mr, nil, v.lanes) end
        for _, mr in ipairs(v.pv_rows) do want[#want + 1] = v.pv_fn(mr) end
      end
      for _, f in ipairs(want) do assert.is_not_nil(found[f] or micro[f], f .. " is not in the generated C") end
      -- the header declares the entry, the kernel, the variants and the workspace's size,
      -- nothing else that parses
      local hfound = parsed_names(h_text, cfg.name)
      for id, p in pairs(hfound) do
        assert.truthy(p.op == "fwd" or p.op == "kernel" or p.op == "append" or p.op == "workspace_size",
          id .. " in the header")
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

-- The lists the generator and the C runtime share are written once per
-- language: the runtime's X-macro lists must name what the generator knows.
describe("the runtime's lists agree with the generator's", function()
  local header = helper.read_file(helper.root .. "/runtime/attn_runtime.h")

  local function xlist(macro)
    local body = header:match("#define " .. macro .. "%(X%)(.-)\n\n")
    local t = {}
    for id, name in body:gmatch("X%(([%w_]+), ([%w_]+)") do t[#t + 1] = { id = id, name = name } end
    return t
  end

  it("ISAs: the same names, each with its enum", function()
    local c = {}
    for _, e in ipairs(xlist("ATTN_ISA_LIST")) do c[e.name] = "ATTN_ISA_" .. e.id end
    local n = 0
    for _, name in ipairs(require("isa").order) do
      assert.equal(require("isa").get(name).enum, c[name], name)
      n = n + 1
    end
    local m = 0
    for _ in pairs(c) do m = m + 1 end
    assert.equal(n, m)
  end)

  it("storage types: every dtype a name can carry", function()
    local c = {}
    for _, e in ipairs(xlist("ATTN_DTYPE_LIST")) do c[#c + 1] = e.name end
    assert.same(naming.DTYPES, c)
  end)
end)
