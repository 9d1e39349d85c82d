-- The blocked decode kernel's schedule (planner/sdpa_decode.lua): its row
-- classes, their conditions and padding, and its named constants, for two
-- presets; the conditions are evaluated here for every row count a unit can
-- have, so that each count falls in exactly one class.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local config = require("config")
local planner = require("planner")

local function preset(name)
  return planner.plan(assert(config.load(helper.root .. "/configs/" .. name .. ".lua")))
end

local function variant(p, isa)
  for _, v in ipairs(p.variants) do
    if v.isa.name == isa then return v end
  end
  error("no variant " .. isa)
end

--- The value of a named constant of a schedule.
local function const(s, name)
  for _, k in ipairs(s.consts) do
    if k[1] == name then return k[2] end
  end
  return nil
end

local compile = rawget(_G, "loadstring") or load

--- Evaluates the C condition of a class for gl rows a kv head, with the
-- flags of the classes tested before it and the runtime's answers in env.
local function eval(s, cond, env)
  local e = cond:gsub("attn_cpu%(%)%->decode_half_pairs", env.half_pairs and "true" or "false")
  e = e:gsub("w%->dp", env.dp and "true" or "false") -- whether the pair variant called the path
  e = e:gsub("[%a_][%w_]*", function(id)
    if id == "gl" then return tostring(env.gl) end
    local c = const(s, id)
    if c then return tostring(c) end
    if env[id] ~= nil then return tostring(env[id]) end
    if id == "true" or id == "false" then return id end
    error("unknown name in a class condition: " .. id)
  end)
  e = e:gsub("&&", " and "):gsub("||", " or "):gsub("!", " not ")
  if e == "0" then return false end
  return assert(compile("return " .. e))()
end

--- The class gl rows a kv head fall in (the last class holds where no other does).
local function class_of(s, gl, half_pairs, dp)
  local env = { gl = gl, half_pairs = half_pairs, dp = dp }
  local found = {}
  for i, cl in ipairs(s.classes) do
    local holds
    if i == #s.classes then
      holds = eval(s, cl.cond, env)
    else
      holds = eval(s, cl.cond, env)
      env[cl.name] = holds
    end
    if holds then found[#found + 1] = cl.name end
  end
  return found
end

describe("the decode schedule", function()
  local llama = preset("llama3_8b")
  local s512, s2 = variant(llama, "avx512").dsched, variant(llama, "avx2").dsched

  it("names every constant the unit tests or pads to", function()
    assert.equal(16, const(s512, "ROWS_VEC"))
    assert.equal(8, const(s512, "ROWS_HALF"))
    assert.equal(4, const(s512, "ROWS_QUARTER"))
    assert.equal(32, const(s512, "ROWS_PANEL"))
    assert.equal(8, const(s512, "PV_WIDEST"))
    assert.equal(8, const(s512, "ROW_LINES"))
    assert.equal(8, const(s2, "ROWS_VEC"))
    assert.equal(16, const(s2, "ROWS_PANEL"))
    assert.equal(6, const(s2, "PV_WIDEST"))
    for _, k in ipairs(s512.consts) do
      assert.is_string(k[3])
      assert.is_true(#k[3] > 10, k[1])
    end
    -- the chunks of D of the P*V calls that prefetch (AVX-512: 7 and 8 rows in 3 chunks, the rest in 2)
    assert.equal(7, const(s512, "PV_WIDE_ROWS"))
    assert.equal(3, const(s512, "PV_WIDE_CHUNKS"))
    assert.equal(2, const(s512, "PV_NARROW_CHUNKS"))
    assert.equal("take >= PV_WIDE_ROWS ? PV_WIDE_CHUNKS : PV_NARROW_CHUNKS", s512.c.pv_chunks)
    assert.is_nil(const(s2, "PV_WIDE_ROWS")) -- AVX2's P*V kernels take no rows
  end)

  it("names the streaming units' constants, by their rows a kv head", function()
    local v = variant(llama, "avx512")
    local function sconst(R, name)
      for _, k in ipairs(v.dsched.stream_consts[R]) do if k[1] == name then return k[2] end end
      return nil
    end
    for _, R in ipairs(v.stream.rows) do
      assert.equal(R, sconst(R, "HEAD_ROWS"))
      assert.equal(R * v.dqs, sconst(R, "HEAD_Q"))
      assert.equal(R * v.dvp, sconst(R, "HEAD_O"))
      assert.equal(4, sconst(R, "HEAD_STATE"))
      -- the several-key steps' keys, only where the unit has them
      assert.equal(v.stream.nkeys[R] > 1 and v.stream.nkeys[R] or nil, sconst(R, "STEP_KEYS"))
    end
    assert.equal(2, sconst(4, "STEP_KEYS"))
  end)

  it("lists Llama-3-8B's classes on AVX-512 and AVX2 in order", function()
    local names = {}
    for _, cl in ipairs(s512.classes) do names[#names + 1] = cl.name end
    assert.same({ "lanes", "hpairs", "pairs", "dots", "panel" }, names)
    names = {}
    for _, cl in ipairs(s2.classes) do names[#names + 1] = cl.name end
    assert.same({ "lanes", "pairs", "dots", "panel" }, names)
    -- one vector of rows in pairs of D on AVX-512 (two vectors), along the lanes on AVX2
    assert.equal("dpairs (two vectors)", s512.classes[1].scores)
    assert.equal("DECODE_BLOCK_ONE", s512.classes[1].block_l2)
    assert.equal("lanes", s2.classes[1].scores)
    assert.equal("DECODE_BLOCK", s2.classes[1].block_l2)
    -- the prefetch plan: one vector of rows and the panels take the next block inside P*V on AVX-512
    assert.is_true(s512.classes[1].pv_pf)
    assert.is_true(s512.classes[5].pv_pf)
    assert.equal("none", s512.classes[5].key_starts)
    assert.is_false(s2.classes[1].pv_pf)
    assert.equal("spread", s2.classes[1].key_starts)
  end)

  it("puts every row count in exactly one class, padded to at least its rows", function()
    -- GROUP 4: Lq 1-16 gives 4-64 rows a kv head
    local want512 = { [4] = "hpairs", [8] = "pairs", [12] = "lanes", [16] = "lanes", [20] = "dots", [32] = "panel",
      [64] = "panel" }
    for gl = 1, 64 do
      for _, hp in ipairs({ true, false }) do
        local f = class_of(s512, gl, hp)
        -- hpairs holds within pairs: pairs is its parent class
        if f[1] == "hpairs" then
          assert.same({ "hpairs", "pairs" }, f, "gl " .. gl)
        else
          assert.equal(1, #f, ("gl %d: %s"):format(gl, table.concat(f, ", ")))
        end
        if want512[gl] then
          local want = want512[gl] == "hpairs" and not hp and "dots" or want512[gl]
          assert.equal(want, f[1], "gl " .. gl)
        end
      end
      local f2 = class_of(s2, gl, false)
      assert.equal(1, #f2, "avx2 gl " .. gl)
    end
    assert.equal("pairs", class_of(s2, 4, false)[1])
    assert.equal("lanes", class_of(s2, 8, false)[1])
    assert.equal("dots", class_of(s2, 12, false)[1])
    assert.equal("panel", class_of(s2, 16, false)[1])
  end)

  it("describes the schedule of a 16-bit cache: no pairs, no prefetch inside the kernels", function()
    local s = variant(preset("mistral_7b_bf16"), "avx512").dsched
    local lines = require("planner.sdpa_decode").describe(s)
    assert.is_true(#lines > 5)
    local names = {}
    for _, cl in ipairs(s.classes) do
      names[#names + 1] = cl.name
      assert.is_false(cl.scores_pf, cl.name)
      assert.is_false(cl.pv_pf, cl.name)
    end
    assert.same({ "lanes", "pairs", "dots", "panel" }, names)
    assert.equal("0", s.classes[2].cond) -- pairs of D only from an f32 cache
    assert.is_nil(const(s, "ROW_LINES"))
    assert.equal("lanes", s.classes[1].scores)
  end)

  it("takes bf16 pair products for a panel of rows a kv head where the pair variant calls it", function()
    local p = preset("deepseek_v3_decode")
    local s = variant(p, "avx512").dsched
    assert.equal("dp", s.classes[1].name)
    assert.equal(variant(p, "avx512bf16"), s.dp.v)
    assert.equal(32, const(s, "DP_ROWS"))
    assert.equal(256, const(s, "DP_BLOCK"))
    assert.equal(288, const(s, "DP_PAIRS"))
    assert.equal(32, const(s, "DP_KEY_BLOCK")) -- blocks of 16 pairs of keys (AVX-512: 16 lanes)
    for _, gl in ipairs({ 1, 8, 16, 31, 32, 56, 128, 2048 }) do
      local f = class_of(s, gl, false, true)
      if gl >= 32 then -- within the panels: their padding, its own kernels
        assert.same({ "dp", "panel" }, f, "gl " .. gl)
      else
        assert.equal(1, #f, "gl " .. gl)
        assert.are_not.equal("dp", f[1], "gl " .. gl)
      end
      assert.are_not.equal("dp", class_of(s, gl, false, false)[1], "the avx512 variant's own calls, gl " .. gl)
    end
    -- none where no call has a panel of rows a kv head (the prefill preset: one row a head and
    -- query), nor on variants of f32 products alone, nor on a paged cache
    assert.is_nil(variant(preset("deepseek_v3_prefill"), "avx512").dsched.dp)
    assert.is_nil(variant(preset("llama3_8b"), "avx512").dsched.dp)
    local paged = planner.plan(assert(config.load(helper.root .. "/configs/test/t_paged_p1.lua")))
    for _, v in ipairs(paged.variants) do
      if v.dsched then assert.is_nil(v.dsched.dp, v.name) end
    end
  end)

  it("is not planned for a variant that calls another's decode path", function()
    local p = planner.plan(assert(config.load(helper.root .. "/configs/test/t_bf16_dot.lua")))
    local by = 0
    for _, v in ipairs(p.variants) do
      if v.decode_by then
        by = by + 1
        assert.is_nil(v.dsched, v.name)
      else
        assert.is_table(v.dsched, v.name)
      end
    end
    assert.equal(1, by)
  end)
  it("sizes a block type's decode block by its bytes a value (34 / 32, 18 / 32), not a block's", function()
    local common = require("planner")
    assert.equal(34 / 32, common.value_bytes("q8_0"))
    assert.equal(18 / 32, common.value_bytes("q4_0"))
    assert.equal(2, common.value_bytes("f16"))
    local sdpa = require("planner.sdpa")
    -- Llama-3-8B: 8 kv heads of K and V rows of 128 values a key
    local function block(kv)
      local c = assert(config.load(helper.root .. "/configs/llama3_8b.lua"))
      c.dtype = { kv = kv }
      return sdpa.default_decode_block(c)
    end
    local f16 = block("f16") -- 4096 bytes a key: 32 keys in DECODE_BLOCK_BYTES
    assert.equal(math.floor(sdpa.DECODE_BLOCK_BYTES / 4096 / 8) * 8, f16)
    assert.equal(math.floor(sdpa.DECODE_BLOCK_BYTES / (8 * 256 * 34 / 32) / 8) * 8, block("q8_0"))
    assert.is_true(block("q8_0") > f16)
    assert.equal(sdpa.DECODE_BLOCK, block("q4_0"))
    assert.equal(block("q8_0"), preset("llama3_8b_q8kv").decode.block)
  end)

  it("gathers a block's rows where pages are smaller than a block, and counts them in the scratch", function()
    local raw = dofile(helper.root .. "/configs/llama3_8b_f16kv.lua")
    local function plan(page)
      return planner.plan(assert(config.from_table(helper.with(raw, { paged = { page = page } }), "paged")))
    end
    local contiguous = preset("llama3_8b_f16kv")
    assert.is_nil(contiguous.decode.gather)
    local block = contiguous.decode.block
    local p1, big = plan(1), plan(block)
    assert.is_nil(big.decode.gather) -- a page holds a whole block: calls stop at page ends only
    local g = assert(p1.decode.gather)
    assert.equal(p1.decode.blocks.many, g.keys)
    assert.equal(128, g.k)
    assert.equal(128, g.v)
    assert.is_false(g.shared)
    local per = g.keys * p1.Hkv * (g.k + g.v) * 2 -- f16: 2 bytes a value
    local v1, vc = variant(p1, "avx2"), variant(contiguous, "avx2")
    assert.equal(vc.dsched.scratch_bytes + per, v1.dsched.scratch_bytes)
    assert.equal(vc.dsched.scratch_bytes, variant(big, "avx2").dsched.scratch_bytes)
  end)

  it("streams small pages of a 16-bit cache with the rows ahead asked for into L1", function()
    local function plan(name, page)
      local raw = dofile(helper.root .. "/configs/" .. name .. ".lua")
      return planner.plan(assert(config.from_table(helper.with(raw, { paged = { page = page } }), "paged")))
    end
    local contiguous = variant(preset("llama3_8b_f16kv"), "avx512").stream
    local R = contiguous.rows[1] -- Lq 1: Q and O of every head take more than STREAM_QO_L1
    assert.is_true(contiguous.l2[R])
    local block = preset("llama3_8b_f16kv").decode.block
    assert.is_false(variant(plan("llama3_8b_f16kv", 1), "avx512").stream.l2[R])
    assert.is_false(variant(plan("llama3_8b_f16kv", 3), "avx2").stream.l2[R])
    assert.is_true(variant(plan("llama3_8b_f16kv", block), "avx512").stream.l2[R]) -- pages of a block: as contiguous
    assert.is_true(variant(plan("llama3_8b", 1), "avx512").stream.l2[R]) -- f32: the kernel waits on the reads, L2
  end)
end)
