-- The planner: register blocking, tiles, mask paths, ALiBi slopes.
dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local schema = require("schema")
local planner = require("planner")
local isa_registry = require("isa")
local naming = require("naming")

local function cfg_of(raw)
  local base = { name = "p", heads_q = 4, head_dim = 64 }
  for k, v in pairs(raw or {}) do base[k] = v end
  return assert(schema.normalize(base))
end

local function plan_of(raw, opts) return planner.plan(cfg_of(raw), opts) end

--- An integer, also in the sense of Lua 5.3+ (a float 2.0 prints as "2.0"
-- and would leak into the generated C).
local function is_integer(x)
  if math.type then return math.type(x) == "integer" end -- luacheck: ignore 143
  return type(x) == "number" and x == math.floor(x)
end

--- Checks the blocking invariants of one variant.
local function check_variant(v, cfg, tile)
  local isa = v.isa
  local where = ("%s, D=%d, Dv=%d, tile.kv=%d"):format(v.name, cfg.head_dim, cfg.head_dim_v, tile.kv)
  -- scores kernel: MR*NR accumulators + NR K^T loads + 1 broadcast
  assert.is_true(v.qk.mr >= 1 and v.qk.nr >= 1, where)
  local qk_need = v.qk.mr * v.qk.nr + v.qk.nr + 1
  assert.is_true(qk_need <= isa.regs, ("qk blocking %dx%d needs mr*nr + nr + 1 = %d registers, %s has %d (%s)")
    :format(v.qk.mr, v.qk.nr, qk_need, isa.name, isa.regs, where))
  assert.equal(v.qk.nr * isa.lanes, v.qk.nc, where)
  assert.equal(0, tile.kv % v.qk.nc, "nc does not divide tile.kv: " .. where)
  -- P*V kernel: MR*NVC accumulators + MR broadcasts + 1 V load, or with
  -- late broadcasts (pv_block.late_bcast) NVC V loads + 1 broadcast
  local pv = v.pv
  assert.is_true(pv.mr >= 1 and pv.nvc >= 1, where)
  assert.equal(isa.pv_block.late_bcast or false, pv.late_bcast, where)
  local pv_need = pv.mr * pv.nvc + (pv.late_bcast and pv.nvc or pv.mr) + 1
  assert.is_true(pv_need <= isa.regs, ("pv blocking %dx%d needs %d registers, %s has %d (%s)")
    :format(pv.mr, pv.nvc, pv_need, isa.name, isa.regs, where))
  -- the chunks cover exactly ceil(Dv / lanes) vectors, in order, without overlap
  local nv = math.ceil(cfg.head_dim_v / isa.lanes)
  assert.equal(nv, pv.nv, where)
  assert.equal(#pv.chunks, pv.nchunks, where)
  local next_first = 0
  for _, c in ipairs(pv.chunks) do
    assert.equal(next_first, c.first, where)
    assert.is_true(c.count >= 1 and c.count <= pv.nvc, where)
    next_first = c.first + c.count
  end
  assert.equal(nv, next_first, "chunks do not cover every vector: " .. where)
  assert.equal(cfg.head_dim_v % isa.lanes, v.dv_tail, where)
  -- the row counts the micro-kernels are generated for
  assert.same(v.qk.mr > 1 and { v.qk.mr, 1 } or { 1 }, v.qk_rows, where)
  -- and the prefill's narrow scores kernel (one vector of a panel's columns)
  -- where a block has several vectors (the sdpa planner's prefill path)
  if require("families").of(cfg).planner == "planner.sdpa" then
    assert.equal(v.qk.mr > 1 and v.qk.nr > 1, v.qk_narrow == true, where)
  end
  -- P*V: every row count from the widest down on vector ISAs (the decode
  -- path's kv heads: past MR in the ISA's wider blocking, where it has one),
  -- MR and 1 in plain C
  local want_pv = {}
  local wide = v.pv_wide
  local kv_type = type(cfg.dtype) == "table" and cfg.dtype.kv or cfg.dtype -- one type for all, or each tensor's
  assert.equal(isa.lanes > 1 and isa.pv_wide ~= nil and kv_type == "f32", wide ~= nil, where)
  if isa.lanes > 1 then
    for mr = wide and wide.mr or pv.mr, 1, -1 do want_pv[#want_pv + 1] = mr end
  else
    want_pv = pv.mr > 1 and { pv.mr, 1 } or { 1 }
  end
  assert.same(want_pv, v.pv_rows, where)
  -- the wider blocking: more rows than MR, late broadcasts, in the registers
  -- (without alpha's, which its kernels broadcast where a chunk starts)
  if wide then
    assert.is_true(wide.mr > pv.mr and wide.late_bcast, where)
    local wide_need = wide.mr * wide.nvc + wide.nvc + 1
    assert.is_true(wide_need <= isa.regs, ("wide pv blocking %dx%d needs %d registers, %s has %d (%s)")
      :format(wide.mr, wide.nvc, wide_need, isa.name, isa.regs, where))
    assert.equal(wide_need, v.pv.regs_of(wide.mr), where)
    assert.equal(nv, wide.nv, where)
    for mr = 1, wide.mr do assert.equal(mr > pv.mr and wide or pv, v.pv_of(mr), where) end
  end
  -- what the cost comments print is what this spec checks
  assert.equal(qk_need, v.qk.regs_of(v.qk.mr), where)
  assert.equal(pv_need, v.pv.regs_of(pv.mr), where)
  for _, x in ipairs({ v.qk.mr, v.qk.nr, v.qk.nc, pv.mr, pv.nvc, pv.nchunks, pv.nv, v.dv_tail }) do
    assert.is_true(is_integer(x), "not an integer in the plan: " .. where)
  end
end

describe("planner", function()
  describe("register blocking", function()
    local DIMS = { 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 59, 64, 72, 80, 96, 111, 112, 128,
      129, 160, 192, 200, 255, 256, 257, 300, 384, 448, 500, 511, 512 }
    local TILES = { 16, 32, 48, 64, 80, 96, 112, 128, 144, 192, 256, 512, 4096 }
    for _, isa in ipairs({ "avx512", "avx2", "neon", "scalar" }) do
      it(isa .. ": fits the register budget for every head dim and key tile", function()
        for _, dv in ipairs(DIMS) do
          for _, kv in ipairs(TILES) do
            local cfg = cfg_of({ head_dim = 64, head_dim_v = dv, tile = { q = 32, kv = kv }, isa = { isa } })
            local plan = planner.plan(cfg)
            assert.equal(1, #plan.variants)
            check_variant(plan.variants[1], cfg, plan.tile)
          end
        end
        for dv = 1, 512 do
          local cfg = cfg_of({ head_dim_v = dv, isa = { isa } })
          local plan = planner.plan(cfg)
          check_variant(plan.variants[1], cfg, plan.tile)
        end
      end)
    end

    it("the prefill path's products: P*V every row count up to MR where the decode path reads f32, "
      .. "else MR, half MR and 1; scores MR, half MR (vector ISAs) and 1", function()
      -- f32 K/V with and without the decode path, a 16-bit cache (its own decode kernels
      -- besides the prefill path's f32 ones), and bf16 pair dot products (MR and 1)
      for _, c in ipairs({ { {}, true }, { { decode_max_q = 0 }, false },
          { { dtype = { q = "f32", kv = "f16", o = "f32" } }, false },
          { { dtype = "bf16", matmul = "bf16" }, false } }) do
        local raw, all = c[1], c[2]
        local cfg = cfg_of(raw)
        for _, v in ipairs(planner.plan(cfg).variants) do
          local where = v.name .. " " .. require("dkjson").encode(raw)
          local two = v.pv.mr > 1 and { v.pv.mr, 1 } or { 1 }
          if v.dp then
            assert.same(two, v.prefill_pv_rows, where)
            assert.same(v.prefill_pv_rows, v.mkdp.pv_rows, where)
            assert.same(v.qk_rows, v.mkdp.qk_rows, where)
            assert.is_nil(v.qk_half, where)
          else
            local three = v.lanes > 1 and { v.pv.mr, math.floor(v.pv.mr / 2), 1 } or two
            local upto_mr = two
            if v.lanes > 1 then
              upto_mr = {}
              for mr = v.pv.mr, 1, -1 do upto_mr[#upto_mr + 1] = mr end
            end
            assert.same(all and upto_mr or three, v.prefill_pv_rows, where)
            assert.equal("f32", v.mk[1].dt, where)
            -- the f32 instances: the decode path's rows (its wider ones too) where it reads f32
            assert.same(all and v.pv_rows or v.prefill_pv_rows, v.mk[1].pv_rows, where)
            if v.lanes > 1 then -- 4 on AVX-512 and NEON, 2 on AVX2
              assert.equal(math.floor(v.qk.mr / 2), v.qk_half, where)
              assert.same({ v.qk.mr, v.qk_half, 1 }, v.mk[1].qk_rows, where)
            else -- plain C: MR and 1
              assert.is_nil(v.qk_half, where)
              assert.same(v.qk_rows, v.mk[1].qk_rows, where)
            end
          end
        end
      end
    end)

    it("the ISA modules state lanes and registers", function()
      local expect = { avx512 = { 16, 32 }, avx2 = { 8, 16 }, neon = { 4, 32 }, scalar = { 1, 16 } }
      for name, lr in pairs(expect) do
        local isa = assert(isa_registry.get(name))
        assert.equal(lr[1], isa.lanes, name)
        assert.equal(lr[2], isa.regs, name)
        assert.equal(name, isa.name)
      end
      assert.same({ "avx512bf16", "avx512", "avx2", "neon", "scalar" }, isa_registry.order)
      assert.is_nil((isa_registry.get("sse2")))
      assert.is_false(isa_registry.known("sse2"))
      assert.is_true(isa_registry.known("neon"))
    end)
  end)

  describe("variants", function()
    it("one per listed ISA, best first, named by the naming module", function()
      local plan = plan_of({ isa = { "scalar", "avx2" } })
      assert.equal(2, #plan.variants)
      assert.equal("avx2", plan.variants[1].name)
      assert.equal("scalar", plan.variants[2].name)
      for _, v in ipairs(plan.variants) do
        assert.equal(naming.variant("p", v.name), v.fn)
        assert.equal(naming.qk("p", v.qk.mr, v.qk.nc, v.name), v.qk_fn(v.qk.mr))
        assert.equal(naming.pv("p", 1, plan.Dv, v.name), v.pv_fn(1))
      end
      assert.equal("attn_p_fwd", plan.entry)
      assert.equal("attn_p_kernel", plan.kernel)
    end)

    it("stores an f32 O of whole vectors past the caches where the ISA spells it", function()
      for _, raw in ipairs({ { head_dim = 64 }, { head_dim = 64, head_dim_v = 40 },
          { head_dim = 64, dtype = { o = "bf16" } } }) do
        local plan = plan_of(raw)
        for _, v in ipairs(plan.variants) do
          local whole = plan.Dv % v.lanes == 0 and plan.dtype.o == "f32"
          assert.equal(v.isa.stream ~= nil and whole, v.stream_o, v.name)
        end
        -- AVX-512 and AVX2 spell it, plain C and NEON do not
        assert.is_true(plan.variants[1].isa.stream ~= nil)
      end
    end)

    it("target attributes only where the ISA needs them", function()
      local plan = plan_of()
      for _, v in ipairs(plan.variants) do
        if v.name == "scalar" then
          -- plain C; only its opt-out of gcc's auto-vectorizer (see isa/scalar.lua)
          assert.equal("ATTN_NO_AUTOVEC", v.target_attr)
        elseif v.isa.target then
          assert.equal(('__attribute__((target("%s")))'):format(v.isa.target), v.target_attr)
        end
      end
    end)
  end)

  describe("shape", function()
    it("copies the dims and the GQA group as integers", function()
      local plan = plan_of({ heads_q = 32, heads_kv = 8, head_dim = 128, head_dim_v = 96 })
      assert.equal(32, plan.Hq)
      assert.equal(8, plan.Hkv)
      assert.equal(4, plan.group)
      assert.equal(128, plan.D)
      assert.equal(96, plan.Dv)
      for _, x in ipairs({ plan.Hq, plan.Hkv, plan.group, plan.D, plan.Dv, plan.tile.q, plan.tile.kv,
        plan.tile_flops }) do
        assert.is_true(is_integer(x))
      end
      assert.equal(1, plan_of({ heads_q = 12 }).group)
      assert.equal(71, plan_of({ heads_q = 71, heads_kv = 1 }).group)
    end)

    it("FLOPs per full tile: 2 * q * kv * (D + Dv)", function()
      local plan = plan_of({ head_dim = 64, head_dim_v = 32, tile = { q = 16, kv = 32 } })
      assert.equal(2 * 16 * 32 * 96, plan.tile_flops)
    end)
  end)

  describe("tiles", function()
    it("a tile in the config is used as given", function()
      local plan = plan_of({ tile = { q = 7, kv = 48 } })
      assert.same({ q = 7, kv = 48 }, plan.tile)
      assert.equal("set in the config", plan.tile_reason)
    end)

    it("\"auto\" without a tuning result takes the heuristic default", function()
      local plan = plan_of({ tile = "auto" })
      assert.same(planner.default_tile(cfg_of()), plan.tile)
      assert.truthy(plan.tile_reason:find("heuristic", 1, true), plan.tile_reason)
      assert.same(plan.tile, plan_of().tile)
    end)

    it("the heuristic sdpa tile: 256 keys where their packed K and V fit TILE_KV_BYTES, else 128", function()
      local sdpa = planner.family("sdpa")
      for _, c in ipairs({ { 64, 64, 256 }, { 128, 128, 256 }, { 128, 64, 256 }, { 256, 256, 128 },
        { 192, 128, 128 }, { 512, 512, 128 } }) do
        local cfg = cfg_of({ head_dim = c[1], head_dim_v = c[2] })
        local t = planner.default_tile(cfg)
        assert.same({ q = sdpa.DEFAULT_TILE_Q, kv = c[3] }, t, c[1] .. " " .. c[2])
        assert.equal(0, t.kv % 16)
        assert.same(t, planner.plan(cfg).tile)
      end
      local lin = assert(schema.normalize({ name = "pl", kind = "linear", heads_q = 2, head_dim = 16 }))
      assert.same(planner.family("linear").default_tile(lin), planner.plan(lin).tile)
      local add = assert(schema.normalize({ name = "pa", kind = "additive", query_dim = 8, key_dim = 8, attn_dim = 8 }))
      assert.same({ q = 0, kv = 0 }, planner.plan(add).tile)
    end)

    it("opts.tile overrides both, with its reason", function()
      local plan = plan_of({ tile = { q = 8, kv = 16 } }, { tile = { q = 32, kv = 128 }, tile_reason = "tuned" })
      assert.same({ q = 32, kv = 128 }, plan.tile)
      assert.equal("tuned", plan.tile_reason)
      assert.equal("given", plan_of(nil, { tile = { q = 32, kv = 128 } }).tile_reason)
    end)
  end)

  describe("mask paths", function()
    it("nothing at all without masks", function()
      local p = plan_of()
      assert.is_false(p.causal)
      assert.is_false(p.has_left)
      assert.is_false(p.has_right)
      assert.is_false(p.has_global)
      assert.is_false(p.has_spans)
      assert.is_false(p.padding)
      assert.equal("none", p.mask)
      assert.is_nil(p.softcap)
      assert.is_false(p.alibi)
      assert.is_nil(p.alibi_slopes)
    end)

    it("causal: a right bound at the diagonal, no separate right side", function()
      local p = plan_of({ causal = true })
      assert.is_true(p.causal)
      assert.is_false(p.has_left)
      assert.is_false(p.has_right)
      assert.is_true(p.has_spans)
      assert.equal(0, p.window_right)
    end)

    it("window sides", function()
      local p = plan_of({ window = { left = 7, right = 3 } })
      assert.is_true(p.has_left)
      assert.is_true(p.has_right)
      assert.equal(7, p.window_left)
      assert.equal(3, p.window_right)
      p = plan_of({ window = { left = -1, right = 5 } })
      assert.is_false(p.has_left)
      assert.is_true(p.has_right)
      p = plan_of({ sliding_window = 16, causal = true })
      assert.is_true(p.has_left)
      assert.is_false(p.has_right)
      assert.equal(15, p.window_left)
    end)

    it("global tokens matter only with a window", function()
      assert.is_false(plan_of({ global_tokens = 4 }).has_global)
      assert.is_false(plan_of({ global_tokens = 4, causal = true }).has_global)
      assert.is_true(plan_of({ global_tokens = 4, sliding_window = 8 }).has_global)
      assert.is_true(plan_of({ global_tokens = 1, window = { right = 2 } }).has_global)
      assert.is_false(plan_of({ global_tokens = 0, sliding_window = 8 }).has_global)
      assert.equal(4, plan_of({ global_tokens = 4 }).global_tokens)
    end)

    it("positions: bottom-right unless causal = \"top_left\", decided once in p.pos", function()
      for _, raw in ipairs({ {}, { causal = true }, { causal = "bottom_right" }, { sliding_window = 4 } }) do
        local p = plan_of(raw)
        assert.is_false(p.top_left)
        assert.equal("i0 + r + lk - args->seq_q", p.pos("i0 + r", "lk", "args->seq_q"))
      end
      local p = plan_of({ causal = "top_left" })
      assert.is_true(p.causal)
      assert.is_true(p.top_left)
      assert.equal(0, p.window_right)
      assert.equal("i", p.pos("i", "lk", "Lq"))
    end)

    it("chunks: spans, and global queries exempt from them", function()
      local p = plan_of({ chunk = 8 })
      assert.equal(8, p.chunk)
      assert.is_true(is_integer(p.chunk))
      assert.is_true(p.has_spans)
      assert.is_false(p.has_left or p.has_right)
      assert.is_false(p.has_global)
      assert.is_true(plan_of({ chunk = 8, global_tokens = 2 }).has_global)
      assert.is_true(is_integer(plan_of({ chunk = 8.0 }).chunk))
      assert.is_nil(plan_of().chunk)
    end)

    it("the spec names the alignment and the chunk only when set", function()
      local function fields(raw)
        local t = {}
        for i, f in ipairs(plan_of(raw).spec_fields) do t[f[1]] = { i, f[2] } end
        return t
      end
      local f = fields({ causal = true })
      assert.is_nil(f.top_left)
      assert.is_nil(f.chunk)
      f = fields({ causal = "top_left", chunk = 24 })
      assert.equal("1", f.top_left[2])
      assert.equal(f.causal[1] + 1, f.top_left[1])
      assert.equal(24, f.chunk[2])
      assert.equal(f.window_right[1] + 1, f.chunk[1])
    end)

    it("padding and mask tensors", function()
      local p = plan_of({ padding = true, mask = "bias" })
      assert.is_true(p.padding)
      assert.is_true(p.has_spans)
      assert.equal("bias", p.mask)
      assert.equal("bool", plan_of({ mask = "bool" }).mask)
    end)

    it("scale and softcap are carried over", function()
      local p = plan_of({ scale = 0.3, softcap = 30 })
      assert.equal(0.3, p.scale)
      assert.equal(30, p.softcap)
      assert.equal(1 / 8, plan_of().scale)
    end)
  end)

  describe("ALiBi slopes", function()
    local function close(a, b) return math.abs(a - b) <= 1e-15 * math.max(1, math.abs(b)) end
    local function assert_slopes(expected, got)
      assert.equal(#expected, #got)
      for i = 1, #expected do
        assert.is_true(close(expected[i], got[i]), ("slope %d: expected %.17g, got %.17g"):format(i, expected[i],
          got[i]))
      end
    end

    it("n = 8: 2^-1 .. 2^-8", function()
      local want = {}
      for h = 1, 8 do want[h] = 2 ^ -h end
      assert_slopes(want, planner.family("sdpa").alibi_slopes(8))
    end)

    it("n = 12: the 8 of n = 8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5", function()
      local want = {}
      for h = 1, 8 do want[h] = 2 ^ -h end
      want[9], want[10], want[11], want[12] = 2 ^ -0.5, 2 ^ -1.5, 2 ^ -2.5, 2 ^ -3.5
      assert_slopes(want, planner.family("sdpa").alibi_slopes(12))
    end)

    it("n = 1: 2^-8", function()
      assert_slopes({ 2 ^ -8 }, planner.family("sdpa").alibi_slopes(1))
    end)

    it("powers of two: 2^(-8(h+1)/n)", function()
      for _, n in ipairs({ 2, 4, 16, 32, 64 }) do
        local want = {}
        for h = 0, n - 1 do want[h + 1] = 2 ^ (-8 * (h + 1) / n) end
        assert_slopes(want, planner.family("sdpa").alibi_slopes(n))
      end
    end)

    it("other counts: c = 2^floor(log2 n) slopes, then every other slope of 2c", function()
      for _, n in ipairs({ 3, 5, 6, 7, 20, 24, 40, 71 }) do
        local c = 1
        while c * 2 <= n do c = c * 2 end
        local want = {}
        for h = 1, c do want[h] = 2 ^ (-8 * h / c) end
        local k = 0
        while #want < n do
          want[#want + 1] = 2 ^ (-8 * (k + 1) / (2 * c))
          k = k + 2
        end
        local got = planner.family("sdpa").alibi_slopes(n)
        assert_slopes(want, got)
        for i = 1, n do assert.is_true(got[i] > 0 and got[i] < 1) end
      end
    end)

    it("the plan spells them as C float literals, one per query head", function()
      local p = plan_of({ heads_q = 12, alibi = true })
      assert.equal(12, #p.alibi_slopes)
      local prev
      for h, s in ipairs(p.alibi_slopes) do
        assert.truthy(s:match("^[%d.e%-]+f$"), s)
        -- in the order of alibi_slopes (whatever constant factor the kernel folds in)
        local x = tonumber(s:sub(1, -2))
        if prev and h ~= 9 then assert.is_true(x < prev, "slope " .. h) end
        prev = x
      end
    end)
  end)
end)

describe("ISA storage-type operations", function()
  it("f32 is the ISA's own load and store; other types raise until a module spells them", function()
    for _, name in ipairs(isa_registry.order) do
      local isa = isa_registry.get(name)
      assert.equal(isa.load("p"), isa.load_from("f32", "p"), name)
      assert.equal(isa.store("p", "v"), isa.store_to("f32", "p", "v"), name)
      if isa.lanes > 1 then -- partial vectors (plain C has none)
        assert.equal(isa.loadn("p", 1), isa.loadn_from("f32", "p", 1), name)
        assert.equal(isa.storen("p", "v", 1), isa.storen_to("f32", "p", "v", 1), name)
      end
      assert.equal(isa.set1("x"), isa.set1_from("f32", "x"), name)
      for _, dt in ipairs({ "bf16", "f16" }) do
        if not (isa.storage and isa.storage[dt]) then
          assert.has_error(function() isa.load_from(dt, "p") end)
        end
      end
    end
  end)

  describe("weights", function()
    it("takes the blocked decode path (no streaming kernel) and sets the spec's weights only when on", function()
      local on, off = plan_of({ heads_kv = 4, weights = true }), plan_of({ heads_kv = 4 })
      local function has_weights(p)
        for _, f in ipairs(p.spec_fields) do if f[1] == "weights" then return f[2] end end
      end
      for _, v in ipairs(on.variants) do assert.is_nil(v.stream, v.name) end
      local streams = false
      for _, v in ipairs(off.variants) do streams = streams or v.stream ~= nil end
      assert.is_true(streams) -- the same config without weights streams where the ISA can
      assert.is_true(on.weights)
      assert.is_false(off.weights)
      assert.equal("1", has_weights(on))
      assert.is_nil(has_weights(off))
    end)
  end)

  describe("streaming decode steps", function()
    local function stream(raw, isa)
      for _, v in ipairs(plan_of(raw).variants) do
        if v.isa.name == isa then return v.stream end
      end
    end
    it("holds the two-key step for the runtime to pick from f32 where the rows' Q and O fill half an L1", function()
      -- Llama-3-8B: 32 query heads, 8 kv heads, D 128: 4 rows a kv head, 32 KiB of Q and O
      local llama = { heads_q = 32, heads_kv = 8, head_dim = 128 }
      for _, isa in ipairs({ "avx512", "avx2" }) do
        local st = stream(llama, isa)
        assert.equal(2, st.nkeys[4], isa)
        assert.is_true(st.by_cpu[4], isa)
        assert.is_true(st.l2[4], isa)
      end
      assert.equal(1, stream(llama, "neon").nkeys[4]) -- no pair step for f32 there
      -- GPT-2's shape (MHA, 12 x 64): 6 KiB of Q and O a query row, so one key a
      -- step up to 2 rows a kv head (12 KiB), the choice from 3 (18 KiB)
      local gpt2 = stream({ heads_q = 12, heads_kv = 12, head_dim = 64 }, "avx512")
      local nkeys, by_cpu = {}, {}
      for rows = 1, 4 do nkeys[rows], by_cpu[rows] = gpt2.nkeys[rows], gpt2.by_cpu[rows] end
      assert.same({ 1, 1, 2, 2 }, nkeys)
      assert.same({ false, false, true, true }, by_cpu)
    end)
    it("takes two keys a step from 16-bit caches, prefetching into L2 only where the rows fill L1", function()
      local f16_cache = { q = "f32", kv = "f16", o = "f32" }
      local big = stream({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = f16_cache }, "avx512")
      assert.equal(2, big.nkeys[4])
      assert.is_false(big.by_cpu[4])
      assert.is_true(big.l2[4])
      local small = stream({ heads_q = 12, heads_kv = 12, head_dim = 64, dtype = "bf16" }, "avx512")
      assert.equal(2, small.nkeys[1])
      assert.is_false(small.l2[1])
      assert.is_true(small.l2[4]) -- 24 KiB of Q and O at 4 rows a kv head
    end)
    it("takes the block step from q8_0 / q4_0 caches on x86 only, without score terms", function()
      local q8 = { heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { q = "f32", kv = "q8_0", o = "f32" } }
      local st = stream(q8, "avx512")
      assert.equal(16, st.qblock.keys)
      assert.equal(4, st.qblock.vectors[4]) -- 4 rows x 4 vectors: 16 of the 32 registers, 2 blocks of Dv
      assert.equal(2, stream(q8, "avx2").qblock.vectors[4]) -- 8 of 16: half a block
      assert.is_nil(stream(q8, "neon").qblock)
      assert.is_nil(stream(q8, "scalar")) -- no streaming kernel there (no four-float registers)
      local q4 = { heads_q = 4, heads_kv = 4, head_dim = 32, head_dim_v = 96, dtype = { kv = "q4_0" } }
      local vec = {}
      for rows = 1, 4 do vec[rows] = stream(q4, "avx512").qblock.vectors[rows] end
      assert.same({ 6, 6, 2, 2 }, vec) -- divisors of Dv's 6 vectors, whole blocks or a part of one
      local masked = { heads_q = 32, heads_kv = 8, head_dim = 128, mask = "bias", dtype = { kv = "q8_0" } }
      assert.is_nil(stream(masked, "avx512").qblock)
      assert.is_nil(stream({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = "f16" }, "avx512").qblock)
    end)
    it("scores the block step's keys along the lanes for matmul = \"int8\" on x86", function()
      local q8 = { heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { kv = "q8_0" } }
      assert.is_nil(stream(q8, "avx512").qblock.keys_in_lanes) -- f32 products: key pairs
      q8.matmul = "int8"
      assert.is_true(stream(q8, "avx512").qblock.keys_in_lanes) -- 16 keys, 16 lanes
      assert.is_true(stream(q8, "avx2").qblock.keys_in_lanes) -- two vectors of 8 a row
      assert.is_nil(stream(q8, "neon").qblock)
      q8.dtype.kv = "q4_0"
      assert.is_true(stream(q8, "avx512").qblock.keys_in_lanes)
    end)
  end)

  describe("blocked decode blocks", function()
    it("scale the heuristic or tuned block by the rows' work a key, in whole steps of 8 keys", function()
      local llama = { heads_q = 32, heads_kv = 8, head_dim = 128 }
      local cases = {
        { llama, nil, 16, { few = 8, one = 32, many = 64 } },                       -- 8 KiB a key
        { { heads_q = 71, heads_kv = 1, head_dim = 64 }, nil, 64, { few = 32, one = 64, many = 64 } }, -- Falcon-7B
        { { heads_q = 16, heads_kv = 8, head_dim = 256 }, nil, 8, { few = 8, one = 16, many = 32 } }, -- 16 KiB a key
        { llama, { decode_block = 128 }, 128, { few = 64, one = 128, many = 128 } }, -- tuned: never below it
        { llama, { decode_block = 8 }, 8, { few = 8, one = 16, many = 32 } },
      }
      for i, c in ipairs(cases) do
        local p = plan_of(c[1], c[2])
        assert.equal(c[3], p.decode.block, i)
        assert.same(c[4], p.decode.blocks, i)
        for _, keys in pairs(p.decode.blocks) do
          assert.is_true(is_integer(keys) and keys % 8 == 0 and keys <= p.decode.chunk, i)
        end
      end
    end)
    it("prefetch inside the score kernels where K and V rows are f32, of D = Dv and 8 whole lines or more", function()
      assert.is_true(plan_of({ heads_q = 32, heads_kv = 8, head_dim = 128 }).decode.rows_in_scores)
      assert.is_true(plan_of({ heads_q = 16, heads_kv = 8, head_dim = 256 }).decode.rows_in_scores)
      assert.is_false(plan_of({ heads_q = 12, heads_kv = 12, head_dim = 64 }).decode.rows_in_scores)
      assert.is_false(plan_of({ heads_q = 32, heads_kv = 8, head_dim = 136 }).decode.rows_in_scores)
      assert.is_false(plan_of({ heads_q = 32, heads_kv = 8, head_dim = 128, head_dim_v = 256 }).decode.rows_in_scores)
      assert.is_false(plan_of({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = "bf16" }).decode.rows_in_scores)
    end)
    -- a field of each variant's plan, by the variant's name
    local function of_variants(raw, field)
      local out = {}
      for _, v in ipairs(plan_of(raw).variants) do out[v.name] = v[field] end
      return out
    end
    it("and inside the P*V kernels of one vector of rows in pairs of D (AVX-512)", function()
      local function pv_prefetch(raw) return of_variants(raw, "pv_prefetch") end
      assert.same({ avx512 = true, avx2 = false, scalar = false },
        pv_prefetch({ heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2", "scalar" } }))
      assert.same({ avx512 = false, avx2 = false },
        pv_prefetch({ heads_q = 12, heads_kv = 12, head_dim = 64, isa = { "avx512", "avx2" } }))
      assert.same({ avx512 = false },
        pv_prefetch({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { kv = "f16" }, isa = { "avx512" } }))
    end)
    it("and inside the panels' products where the P*V kernels take rows (qk_prefetch)", function()
      local function qk_prefetch(raw) return of_variants(raw, "qk_prefetch") end
      assert.same({ avx512 = true, avx2 = false, scalar = false },
        qk_prefetch({ heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2", "scalar" } }))
      assert.same({ avx512 = false },
        qk_prefetch({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { kv = "bf16" }, isa = { "avx512" } }))
      assert.same({ avx512 = false },
        qk_prefetch({ heads_q = 12, heads_kv = 12, head_dim = 64, isa = { "avx512" } }))
    end)
  end)

  describe("prefill chunks", function()
    local function chunks(raw)
      local out = {}
      for _, v in ipairs(plan_of(raw).variants) do out[v.name] = { v.prefill_chunk, v.prefill_chunk_from } end
      return out
    end
    it("pack 2 MiB of K^T and V at a time, in whole key tiles, once a cache's packed keys pass 8 MiB", function()
      local llama = { heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2", "scalar" } }
      assert.same({ avx512 = { 2048, 8192 }, avx2 = { 2048, 8192 }, scalar = { 2048, 8192 } }, chunks(llama))
      -- bf16 pairs: half the bytes a key (the f32 variant packs f32)
      assert.same({ avx512bf16 = { 4096, 16384 }, avx512 = { 2048, 8192 } }, chunks({ heads_q = 32, heads_kv = 8,
        head_dim = 128, dtype = "bf16", matmul = "bf16", isa = { "avx512bf16", "avx512" } }))
      for _, raw in ipairs({ { heads_q = 2, head_dim = 17, tile = { q = 7, kv = 16 } }, { heads_q = 4, head_dim = 512 },
        { heads_q = 2, head_dim = 1 } }) do
        local p = plan_of(raw)
        for _, v in ipairs(p.variants) do
          local keys = v.prefill_chunk
          assert.is_true(is_integer(keys) and keys >= p.tile.kv and keys % p.tile.kv == 0, v.name)
          assert.is_true(v.prefill_chunk_from >= keys, v.name)
        end
      end
    end)
    it("take the config's prefill_chunk in whole key tiles, and none at 0", function()
      assert.same({ avx512 = { 64, 64 } }, chunks({ head_dim = 16, tile = { q = 16, kv = 32 }, prefill_chunk = 40,
        isa = { "avx512" } }))
      assert.same({ avx512 = {} }, chunks({ head_dim = 16, prefill_chunk = 0, isa = { "avx512" } }))
    end)
    it("size each variant's memory: its packed rows, its chunks (0: none) and a thread's scratch on whole lines",
      function()
        local p = plan_of({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = "bf16", matmul = "bf16",
          isa = { "avx512bf16", "avx512", "scalar" } })
        for i, v in ipairs(p.variants) do
          local pf = v.prefill
          assert.equal(i - 1, pf.index, v.name)
          assert.equal(v.dp and 2 or 4, pf.esize, v.name)
          assert.equal(v.dp and 2 * v.dp_pairs or 128, pf.ktkey, v.name)
          assert.equal(v.dvp + 2, pf.part, v.name)
          assert.same({ v.prefill_chunk, v.prefill_chunk_from }, { pf.chunk, pf.chunk_from }, v.name)
          -- the scratch's arrays: Q, S (and P in bf16), O and the rows' sums and spans, at least
          local least = p.tile.q * (pf.qrow * pf.esize + p.tile.kv * (v.dp and 6 or 4) + v.dvp * 4 + 3 * 4 + 5 * 8)
          assert.is_true(is_integer(pf.thread) and pf.thread % 64 == 0 and pf.thread >= least, v.name)
        end
        -- a gathered sparse pattern carries its sums, never in chunks
        local sp = plan_of({ heads_q = 4, heads_kv = 2, head_dim = 20, sparse = { pattern = "strided", stride = 8 },
          isa = { "avx2" } }).variants[1].prefill
        assert.same({ "strided", 0, 0 }, { sp.gather, sp.chunk, sp.chunk_from })
        local none = plan_of({ head_dim = 16, prefill_chunk = 0, isa = { "avx2" } }).variants[1].prefill
        assert.same({ 0, 0 }, { none.chunk, none.chunk_from })
      end)
  end)

  describe("dropout", function()
    it("takes the blocked decode path (no streaming kernel) and sets the spec's dropout only when on", function()
      local on, off = plan_of({ heads_kv = 4, dropout = true }), plan_of({ heads_kv = 4 })
      local function has_dropout(p)
        for _, f in ipairs(p.spec_fields) do if f[1] == "dropout" then return f[2] end end
      end
      for _, v in ipairs(on.variants) do assert.is_nil(v.stream, v.name) end
      assert.is_true(on.dropout)
      assert.is_false(off.dropout)
      assert.equal("1", has_dropout(on))
      assert.is_nil(has_dropout(off))
    end)
  end)
  describe("linear attention", function()
    it("plans the products of the chunked algorithm on every ISA", function()
      for _, raw in ipairs({ { causal = true }, { causal = false, head_dim = 59, head_dim_v = 40 },
          { causal = "top_left", tile = { q = 24, kv = 32 } } }) do
        raw.kind = "linear"
        local c = cfg_of(raw)
        local p = planner.plan(c)
        assert.equal("linear", p.family)
        -- the heuristic chunk: 32 rows with causal, 64 without; without causal,
        -- keys go through the state 512 at a time
        local want = raw.tile or (raw.causal and { q = 32, kv = 128 } or { q = 64, kv = 512 })
        assert.same(want, p.tile)
        -- O stored past the caches where the ISA can and Dv is whole vectors
        for _, v in ipairs(p.variants) do
          assert.equal(v.isa.stream ~= nil and p.Dv % v.lanes == 0, v.stream_o)
        end
        for _, v in ipairs(p.variants) do
          check_variant(v, c, p.tile)
          local mk = v.mk[1]
          -- scores only where there is a diagonal block; P*V on MR rows, D's rest and single rows
          assert.equal(p.causal and #v.qk_rows or 0, #mk.qk_rows)
          assert.is_true(v.pv_has[v.pv.mr] and (v.pv.mr == 1 or v.pv_has[1]))
          if v.pv_rest > 0 then assert.is_true(v.pv_has[v.pv_rest]) end
          -- the diagonal block (tile.q keys) fits the panels, a packing block the rows
          assert.is_true(v.panels * v.qk.nc >= p.tile.q)
          assert.is_true(v.kb >= p.tile.kv and v.kb >= v.panels * v.qk.nc)
        end
        local fields = {}
        for _, f in ipairs(p.spec_fields) do fields[f[1]] = f[2] end
        assert.equal("ATTN_FAMILY_LINEAR", fields.family)
        assert.equal(p.top_left and "1" or nil, fields.top_left)
        assert.equal("0", fields.state)
      end
    end)
  end)
  describe("the classic families", function()
    it("plans the projections, scores and dot kernels each score needs", function()
      local cases = {
        { raw = { kind = "additive", query_dim = 7, key_dim = 13, attn_dim = 19, bias = true },
          score = "additive", nq = 19, key_proj = true, family = "ATTN_FAMILY_ADDITIVE" },
        { raw = { kind = "luong", score = "dot", query_dim = 9, dtype = { kv = "f16" } },
          score = "dot", nq = 0, key_proj = false, family = "ATTN_FAMILY_LUONG" },
        { raw = { kind = "luong", score = "general", query_dim = 5, key_dim = 11 },
          score = "general", nq = 11, key_proj = false, family = "ATTN_FAMILY_LUONG" },
        { raw = { kind = "luong", score = "concat", query_dim = 6, key_dim = 10, attn_dim = 33, dtype = "bf16" },
          score = "concat", nq = 33, key_proj = true, family = "ATTN_FAMILY_LUONG" },
      }
      for _, case in ipairs(cases) do
        case.raw.name = "c"
        local p = planner.plan(assert(schema.normalize(case.raw)))
        assert.equal(case.score, p.score)
        assert.equal(case.nq, p.NQ)
        assert.equal(case.key_proj, p.key_proj)
        assert.equal("families/classic.c.tmpl", require("families").direction(p.family, "forward").templates.c)
        for _, v in ipairs(p.variants) do
          assert.equal(0, v.nqp % v.lanes)
          assert.is_true(v.nqp >= p.NQ and v.nqp < p.NQ + v.lanes)
          -- a projection calls its dot kernel on MR rows and on 1
          for _, list in ipairs({ p.NQ > 0 and v.dots or nil, p.key_proj and v.doth or nil }) do
            assert.same({ v.mr, 1 }, list[1].rows)
          end
          if case.score == "dot" then
            local found = false
            for _, t in ipairs(v.doth) do found = found or (t.dt == p.dtype.q and t.rows[#t.rows] == 1) end
            assert.is_true(found, v.name)
          end
          assert.equal(p.tanh and 1 or 0, math.min(#v.tanh_types, 1))
        end
        local fields = {}
        for _, f in ipairs(p.spec_fields) do fields[f[1]] = f[2] end
        assert.equal(case.family, fields.family)
        assert.equal(p.Da, fields.attn_dim)
      end
    end)
  end)
end)
