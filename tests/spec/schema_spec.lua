-- The config schema (docs/config.md): defaults, conveniences and errors.
dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local schema = require("schema")

local BASE = { name = "t", heads_q = 8, head_dim = 64 }

local function with(changes)
  local t = {}
  for k, v in pairs(BASE) do t[k] = v end
  for k, v in pairs(changes) do t[k] = v end
  return t
end

local function without(key)
  local t = with({})
  t[key] = nil
  return t
end

--- Normalizes raw, expecting failure; returns the offending key and message.
local function rejects(raw)
  local cfg, key, msg = schema.normalize(raw)
  assert.is_nil(cfg, "expected an error, got a config")
  assert.is_string(msg)
  assert.is_nil(msg:find("\n"), "message is not one line: " .. msg)
  return key, msg
end

--- Expects an error blamed on `key` whose message names it and matches each pattern.
local function rejects_key(raw, key, ...)
  local k, msg = rejects(raw)
  assert.equal(key, k, msg)
  assert.truthy(msg:find(key, 1, true), ("message does not name '%s': %s"):format(key, msg))
  for _, pat in ipairs({ ... }) do
    assert.truthy(msg:find(pat, 1, true), ("expected '%s' in: %s"):format(pat, msg))
  end
  return msg
end

describe("schema", function()
  describe("defaults", function()
    local cfg = assert(schema.normalize({ name = "m", heads_q = 8, head_dim = 64 }))

    it("fills every key of docs/config.md but the optional softcap, chunk, prefill_chunk, weights, dropout, rel_bias, "
      .. "entropy, sinks, temperature, paged, backward, grad_dtype, shared_kv, rope, qk_norm", function()
      for _, k in ipairs(schema.order) do
        if k ~= "softcap" and k ~= "sliding_window" and k ~= "chunk" and k ~= "weights" and k ~= "sparse"
          and k ~= "dropout" and k ~= "prefill_chunk" and k ~= "rel_bias" and k ~= "entropy" and k ~= "sinks"
          and k ~= "temperature" and k ~= "paged" and k ~= "backward" and k ~= "grad_dtype" and k ~= "shared_kv"
          and k ~= "rope" and k ~= "qk_norm" then
          assert.is_not_nil(cfg[k], "missing default for " .. k)
        end
      end
      assert.is_nil(cfg.softcap)
      assert.is_nil(cfg.chunk) -- no chunks
      assert.is_nil(cfg.sparse) -- no sparse pattern
      assert.is_nil(cfg.rel_bias) -- no relative position bias
      assert.is_nil(cfg.prefill_chunk) -- the planner's chunks (absent, so configs echo as before)
      assert.is_nil(cfg.weights) -- no weights output (absent, so configs echo as before)
      assert.is_nil(cfg.dropout) -- no dropout (absent, so configs echo as before)
      assert.is_nil(cfg.sinks)
      assert.is_nil(cfg.temperature)
      assert.is_nil(cfg.paged) -- the contiguous layout
      assert.is_nil(cfg.shared_kv)
      assert.is_nil(cfg.rope)
      assert.is_nil(cfg.qk_norm)
      assert.is_nil(cfg.entropy) -- no entropy output (absent, so configs echo as before)
      assert.is_nil(cfg.sliding_window) -- folded into window
      assert.is_nil(cfg.backward) -- no backward pass (absent, so configs echo as before)
      assert.is_nil(cfg.grad_dtype)
    end)

    it("knows exactly the keys of the sdpa family, and the decode_max_q and prefill_chunk extensions", function()
      local expected = { "name", "kind", "heads_q", "heads_kv", "head_dim", "head_dim_v", "causal",
        "window", "sliding_window", "chunk", "sparse", "global_tokens", "padding", "mask", "scale", "softcap", "alibi",
        "rel_bias", "decode_max_q", "prefill_chunk", "weights", "dropout", "entropy", "sinks", "temperature", "paged",
        "backward", "grad_dtype", "shared_kv", "rope", "qk_norm", "dtype", "matmul", "isa", "tile" }
      assert.same(expected, schema.order_of("sdpa"))
      assert.same(expected, schema.order)
      for _, k in ipairs(expected) do assert.is_true(schema.keys[k]) end
    end)

    it("backward: true kept with grad_dtype, refused where the backward pass is not built, one line each", function()
      local c = assert(schema.normalize(with({ backward = true })))
      assert.is_true(c.backward)
      assert.is_nil(c.grad_dtype) -- f32, the default
      assert.equal("storage", schema.normalize(with({ backward = true, grad_dtype = "storage" })).grad_dtype)
      assert.is_nil(schema.normalize(with({ backward = false })).backward)
      rejects_key(with({ backward = 1 }), "backward", "true or false")
      rejects_key(with({ backward = true, grad_dtype = "f16" }), "grad_dtype", "must be one of f32, storage")
      rejects_key(with({ grad_dtype = "storage" }), "grad_dtype", "needs backward = true")
      rejects_key(with({ backward = true, dtype = { kv = "q8_0" } }), "backward", "not supported yet")
      rejects_key(with({ backward = true, dtype = "bf16", matmul = "bf16" }), "backward", "not supported yet")
    end)

    it("weights: true kept, false and absent normalize to nil, anything else is an error", function()
      assert.is_true(schema.normalize(with({ weights = true })).weights)
      assert.is_nil(schema.normalize(with({ weights = false })).weights)
      assert.is_nil(schema.normalize(with({})).weights)
      rejects_key(with({ weights = 1 }), "weights", "true or false")
      rejects_key(with({ weights = "yes" }), "weights", "true or false")
    end)

    it("dropout: true kept, false and absent normalize to nil, anything else is an error", function()
      assert.is_true(schema.normalize(with({ dropout = true })).dropout)
      assert.is_nil(schema.normalize(with({ dropout = false })).dropout)
      assert.is_nil(schema.normalize(with({})).dropout)
      rejects_key(with({ dropout = 0.1 }), "dropout", "true or false")
    end)

    it("sinks: true kept, false and absent normalize to nil, anything else is an error", function()
      assert.is_true(schema.normalize(with({ sinks = true })).sinks)
      assert.is_nil(schema.normalize(with({ sinks = false })).sinks)
      rejects_key(with({ sinks = 1 }), "sinks", "true or false")
    end)

    it("paged: {page = 1..2^20, order NHD (default) or HND}; implies padding; sparse on the key tiles", function()
      local c = assert(schema.normalize(with({ paged = { page = 16 } })))
      assert.same({ page = 16, order = "NHD" }, c.paged)
      assert.is_true(c.padding)
      assert.same({ page = 1, order = "HND" }, schema.normalize(with({ paged = { page = 1, order = "HND" } })).paged)
      assert.same({ page = 2 ^ 20, order = "NHD" }, schema.normalize(with({ paged = { page = 2 ^ 20 } })).paged)
      rejects_key(with({ paged = 16 }), "paged", "'paged' must be a table {page = integer in 1..1048576")
      rejects_key(with({ paged = {} }), "paged", "'paged.page' is required")
      rejects_key(with({ paged = { page = 0 } }), "paged", "'paged.page' must be in 1..1048576")
      rejects_key(with({ paged = { page = 2 ^ 20 + 1 } }), "paged", "'paged.page' must be in 1..1048576")
      rejects_key(with({ paged = { page = 2.5 } }), "paged", "'paged.page' must be an integer")
      rejects_key(with({ paged = { page = 4, order = "NDH" } }), "paged", "'paged.order' must be one of NHD, HND")
      rejects_key(with({ paged = { page = 4, size = 2 } }), "paged", "unknown field 'size'")
      rejects_key(with({ paged = { page = 4 }, padding = false }), "paged", "it needs padding = true or none")
      -- a sparse pattern on a paged cache: its keys tested on the key tiles, not gathered by residue
      local sp = assert(schema.normalize(with({ paged = { page = 4 }, sparse = { pattern = "strided", stride = 4 } })))
      assert.same({ page = 4, order = "NHD" }, sp.paged)
      assert.is_false(require("planner").plan(sp).sparse_gather)
      assert.is_true(require("planner").plan(assert(schema.normalize(with({ sparse = { pattern = "strided",
        stride = 4 } })))).sparse_gather)
    end)

    it("shared_kv: true kept, false and absent nil; head dims up to 1024 with it, Dv <= D", function()
      local mla = { shared_kv = true, head_dim = 576, head_dim_v = 512, heads_kv = 1 }
      local mla_cfg = assert(schema.normalize(with(mla)))
      assert.is_true(mla_cfg.shared_kv)
      assert.equal(576, mla_cfg.head_dim)
      assert.is_nil(schema.normalize(with({ shared_kv = false })).shared_kv)
      rejects_key(with({ shared_kv = 1 }), "shared_kv", "true or false")
      rejects_key(with({ head_dim = 576 }), "head_dim", "1..512")
      rejects_key(with({ shared_kv = true, head_dim = 1025 }), "head_dim", "1..1024")
      rejects_key(with({ shared_kv = true, head_dim = 64, head_dim_v = 96 }), "shared_kv",
        "head_dim_v (96) must be at most head_dim (64)")
    end)

    it("qk_norm: eps required, offset 0 (default) or 1; one-line errors; not with int8 or bf16 products; with backward",
      function()
      assert.same({ eps = 1e-6, offset = 0 }, schema.normalize(with({ qk_norm = { eps = 1e-6 } })).qk_norm)
      assert.same({ eps = 1e-5, offset = 1 }, schema.normalize(with({ qk_norm = { eps = 1e-5, offset = 1 } })).qk_norm)
      rejects_key(with({ qk_norm = true }), "qk_norm", "'qk_norm' must be a table")
      rejects_key(with({ qk_norm = {} }), "qk_norm", "'qk_norm.eps' is required")
      rejects_key(with({ qk_norm = { eps = 0 } }), "qk_norm", "'qk_norm.eps' must be a finite number > 0")
      rejects_key(with({ qk_norm = { eps = -1e-6 } }), "qk_norm", "'qk_norm.eps' must be a finite number > 0")
      rejects_key(with({ qk_norm = { eps = "1e-6" } }), "qk_norm", "'qk_norm.eps' must be a finite number > 0")
      rejects_key(with({ qk_norm = { eps = 0 / 0 } }), "qk_norm", "'qk_norm.eps' must be a finite number > 0")
      rejects_key(with({ qk_norm = { eps = 1e-6, offset = 2 } }), "qk_norm", "'qk_norm.offset' must be 0")
      rejects_key(with({ qk_norm = { eps = 1e-6, offset = "1" } }), "qk_norm", "'qk_norm.offset' must be 0")
      rejects_key(with({ qk_norm = { eps = 1e-6, weight = 1 } }), "qk_norm", "unknown field 'weight'")
      rejects_key(with({ qk_norm = { eps = 1e-6 }, dtype = "bf16", matmul = "bf16" }), "qk_norm",
        "does not go with matmul")
      rejects_key(with({ qk_norm = { eps = 1e-6 }, matmul = "int8", dtype = { kv = "q8_0" } }), "qk_norm",
        "does not go with matmul = \"int8\"")
      assert.is_true(schema.normalize(with({ qk_norm = { eps = 1e-6 }, rope = {}, backward = true })).backward)
    end)

    it("rope: style, theta, dim, scaling and table with their defaults; one-line errors", function()
      assert.same({ style = "neox", theta = 10000, dim = BASE.head_dim, table = false },
        schema.normalize(with({ rope = {} })).rope)
      local l3 = { type = "llama3", factor = 8, low_freq_factor = 1, high_freq_factor = 4,
        original_max_position = 8192 }
      assert.same({ style = "gptj", theta = 500000, dim = 16, table = false, scaling = l3 },
        schema.normalize(with({ rope = { style = "gptj", theta = 500000, dim = 16, scaling = l3 } })).rope)
      assert.same({ type = "linear", factor = 2 },
        schema.normalize(with({ rope = { scaling = { type = "linear", factor = 2 } } })).rope.scaling)
      assert.is_true(schema.normalize(with({ rope = { table = true } })).rope.table)
      rejects_key(with({ rope = true }), "rope", "'rope' must be a table")
      rejects_key(with({ rope = { style = "llama" } }), "rope", "'rope.style' must be \"neox\" or \"gptj\"")
      rejects_key(with({ rope = { theta = 0 } }), "rope", "'rope.theta' must be a finite number > 0")
      rejects_key(with({ rope = { dim = 3 } }), "rope", "'rope.dim' must be even")
      rejects_key(with({ rope = { dim = 0 } }), "rope", "'rope.dim' must be in 2..")
      rejects_key(with({ rope = { dim = BASE.head_dim + 2 } }), "rope", "'rope.dim' must be in 2..")
      rejects_key(with({ rope = { table = 1 } }), "rope", "'rope.table' must be true or false")
      rejects_key(with({ rope = { base = 1 } }), "rope", "unknown field 'base'")
      rejects_key(with({ rope = { scaling = { type = "yarn", factor = 4 } } }), "rope", "'rope.scaling' must be")
      rejects_key(with({ rope = { scaling = { type = "linear" } } }), "rope", "'rope.scaling.factor' is required")
      rejects_key(with({ rope = { scaling = { type = "linear", factor = -1 } } }), "rope",
        "'rope.scaling.factor' must be a finite")
      rejects_key(with({ rope = { scaling = { type = "linear", factor = 2, beta = 1 } } }), "rope",
        "unknown field 'beta'")
      rejects_key(with({ rope = { scaling = { type = "llama3", factor = 8, low_freq_factor = 4, high_freq_factor = 1,
        original_max_position = 8192 } } }), "rope", "must be greater than 'low_freq_factor'")
      rejects_key(with({ rope = { table = true, scaling = { type = "linear", factor = 2 } } }), "rope",
        "does not go with table = true")
      rejects_key(with({ rope = {}, dtype = "bf16", matmul = "bf16" }), "rope", "does not go with matmul")
    end)

    it("temperature: {scale, floor}, both finite numbers > 0; not with matmul = \"bf16\"", function()
      assert.same({ scale = 0.1, floor = 8192 },
        schema.normalize(with({ temperature = { scale = 0.1, floor = 8192 } })).temperature)
      rejects_key(with({ temperature = 0.1 }), "temperature", "must be a table {scale = number > 0")
      rejects_key(with({ temperature = { scale = 0.1 } }), "temperature", "'temperature.floor' is required")
      rejects_key(with({ temperature = { scale = 0, floor = 1 } }), "temperature",
        "'temperature.scale' must be a finite")
      rejects_key(with({ temperature = { scale = 1, floor = -1 } }), "temperature", "'temperature.floor' must be")
      rejects_key(with({ temperature = { scale = 1, floor = 1 / 0 } }), "temperature", "'temperature.floor' must be")
      rejects_key(with({ temperature = { scale = 1, floor = 1, base = 2 } }), "temperature", "unknown field 'base'")
      rejects_key(with({ temperature = { scale = 1, floor = 1 }, dtype = "bf16", matmul = "bf16" }), "temperature",
        "does not go with matmul")
    end)

    it("decode_max_q: 16 by default, 0 turns the decode path off, at most 64", function()
      assert.equal(16, schema.normalize(with({})).decode_max_q)
      assert.equal(0, schema.normalize(with({ decode_max_q = 0 })).decode_max_q)
      rejects_key(with({ decode_max_q = 65 }), "decode_max_q", "0..64")
    end)

    it("prefill_chunk: absent (the planner's choice) normalizes to nil, else an integer 0..2^20 kept", function()
      assert.is_nil(schema.normalize(with({})).prefill_chunk)
      assert.equal(0, schema.normalize(with({ prefill_chunk = 0 })).prefill_chunk)
      assert.equal(4096, schema.normalize(with({ prefill_chunk = 4096 })).prefill_chunk)
      rejects_key(with({ prefill_chunk = -1 }), "prefill_chunk", "0..1048576")
      rejects_key(with({ prefill_chunk = 1.5 }), "prefill_chunk", "integer")
      rejects_key(with({ prefill_chunk = "auto" }), "prefill_chunk", "integer")
    end)

    it("heads_kv = heads_q, head_dim_v = head_dim", function()
      assert.equal(8, cfg.heads_kv)
      assert.equal(64, cfg.head_dim_v)
    end)

    it("scale = 1/sqrt(head_dim)", function()
      assert.equal(1 / math.sqrt(64), cfg.scale)
      local c2 = assert(schema.normalize({ name = "m", heads_q = 1, head_dim = 3 }))
      assert.equal(1 / math.sqrt(3), c2.scale)
    end)

    it("the rest: sdpa, no masks, f32, all four ISAs best first, tile auto", function()
      assert.equal("sdpa", cfg.kind)
      assert.is_false(cfg.causal)
      assert.same({ left = -1, right = -1 }, cfg.window)
      assert.equal(0, cfg.global_tokens)
      assert.is_false(cfg.padding)
      assert.equal("none", cfg.mask)
      assert.is_false(cfg.alibi)
      assert.equal("f32", cfg.dtype)
      assert.same({ "avx512", "avx2", "neon", "scalar" }, cfg.isa)
      assert.equal("auto", cfg.tile)
    end)

    it("keeps given values", function()
      local c = assert(schema.normalize({ name = "k", kind = "sdpa", heads_q = 6, heads_kv = 3, head_dim = 40,
        head_dim_v = 24, global_tokens = 2, padding = true, mask = "bias", scale = 0.25, softcap = 30,
        alibi = true, dtype = "f32", isa = { "scalar", "avx2" }, tile = { q = 8, kv = 32 } }))
      assert.equal(3, c.heads_kv)
      assert.equal(24, c.head_dim_v)
      assert.equal(2, c.global_tokens)
      assert.is_true(c.padding)
      assert.equal("bias", c.mask)
      assert.equal(0.25, c.scale)
      assert.equal(30, c.softcap)
      assert.is_true(c.alibi)
      assert.same({ "avx2", "scalar" }, c.isa) -- normalized to the best-first order
      assert.same({ q = 8, kv = 32 }, c.tile)
    end)

    it("does not modify the raw table", function()
      local raw = { name = "m", heads_q = 4, head_dim = 8, sliding_window = 4, causal = true }
      assert(schema.normalize(raw))
      assert.same({ name = "m", heads_q = 4, head_dim = 8, sliding_window = 4, causal = true }, raw)
    end)

    it("accepts the extremes of every range", function()
      assert.truthy(schema.normalize(with({ heads_q = 1, head_dim = 1, head_dim_v = 1 })))
      assert.truthy(schema.normalize(with({ head_dim = 512, head_dim_v = 512 })))
      assert.truthy(schema.normalize(with({ tile = { q = 1, kv = 16 } })))
      assert.truthy(schema.normalize(with({ tile = "auto" })))
      assert.truthy(schema.normalize(with({ name = "_" })))
      assert.truthy(schema.normalize(with({ name = ("a"):rep(64) })))
    end)
  end)

  describe("window conveniences", function()
    it("sliding_window = W gives window.left = W - 1", function()
      local c = assert(schema.normalize(with({ sliding_window = 4096 })))
      assert.same({ left = 4095, right = -1 }, c.window)
      assert.is_nil(c.sliding_window)
      c = assert(schema.normalize(with({ sliding_window = 1 })))
      assert.same({ left = 0, right = -1 }, c.window)
    end)

    it("causal sets window.right = 0", function()
      local c = assert(schema.normalize(with({ causal = true })))
      assert.same({ left = -1, right = 0 }, c.window)
      assert.is_true(c.causal)
    end)

    it("causal keeps the window's left side and makes its right side 0", function()
      local c = assert(schema.normalize(with({ causal = true, window = { left = 7, right = 3 } })))
      assert.same({ left = 7, right = 0 }, c.window)
      c = assert(schema.normalize(with({ causal = true, sliding_window = 8 })))
      assert.same({ left = 7, right = 0 }, c.window)
    end)

    it("a window side left out is unbounded", function()
      assert.same({ left = 5, right = -1 }, assert(schema.normalize(with({ window = { left = 5 } }))).window)
      assert.same({ left = -1, right = 2 }, assert(schema.normalize(with({ window = { right = 2 } }))).window)
      assert.same({ left = -1, right = -1 }, assert(schema.normalize(with({ window = {} }))).window)
    end)

    it("window and sliding_window together are an error", function()
      rejects_key(with({ window = { left = 3, right = 0 }, sliding_window = 4 }), "sliding_window", "window")
    end)

    it("sliding_window must be an integer >= 1", function()
      rejects_key(with({ sliding_window = 0 }), "sliding_window")
      rejects_key(with({ sliding_window = 2.5 }), "sliding_window")
      rejects_key(with({ sliding_window = "8" }), "sliding_window")
    end)
  end)

  describe("causal alignment and chunks", function()
    it("causal: false, true or \"bottom_right\" (the same: true), or \"top_left\" (kept)", function()
      assert.is_false(assert(schema.normalize(with({ causal = false }))).causal)
      assert.is_true(assert(schema.normalize(with({ causal = true }))).causal)
      local c = assert(schema.normalize(with({ causal = "bottom_right", sliding_window = 4 })))
      assert.is_true(c.causal)
      assert.same({ left = 3, right = 0 }, c.window)
      c = assert(schema.normalize(with({ causal = "top_left", window = { left = 5, right = 2 } })))
      assert.equal("top_left", c.causal)
      assert.same({ left = 5, right = 0 }, c.window) -- causal folds in, as with true
    end)

    it("causal: anything else is one line listing the four values", function()
      for _, bad in ipairs({ "yes", "top-left", "TOP_LEFT", "bottom_left", 1, 0, { "top_left" } }) do
        rejects_key(with({ causal = bad }), "causal", "true or false", '"bottom_right"', '"top_left"')
      end
      local msg = rejects_key(with({ causal = "topleft" }), "causal")
      assert.truthy(msg:find('got "topleft"', 1, true), msg)
      msg = rejects_key(with({ causal = "a\nb" }), "causal")
      assert.truthy(msg:find('got "a\\n', 1, true), msg)
    end)

    it("chunk: an integer in 1..2^30, absent by default (no chunks)", function()
      assert.is_nil(assert(schema.normalize(with({}))).chunk)
      assert.equal(1, assert(schema.normalize(with({ chunk = 1 }))).chunk)
      assert.equal(8192, assert(schema.normalize(with({ chunk = 8192, causal = true }))).chunk)
      assert.equal(2 ^ 30, assert(schema.normalize(with({ chunk = 2 ^ 30 }))).chunk)
      for _, bad in ipairs({ 0, -1, 2 ^ 30 + 1 }) do rejects_key(with({ chunk = bad }), "chunk", "1..1073741824") end
      for _, bad in ipairs({ 2.5, "8", true, 1 / 0, 0 / 0, { 8 } }) do
        rejects_key(with({ chunk = bad }), "chunk", "integer")
      end
    end)

    it("chunk composes with causal, either alignment, a window and global tokens", function()
      local c = assert(schema.normalize(with({ chunk = 16, causal = "top_left", sliding_window = 8,
        global_tokens = 2 })))
      assert.equal(16, c.chunk)
      assert.equal("top_left", c.causal)
      assert.same({ left = 7, right = 0 }, c.window)
      assert.equal(2, c.global_tokens)
    end)
  end)

  describe("sparse patterns", function()
    it("strided and fixed, absent by default; both make the config causal", function()
      assert.is_nil(assert(schema.normalize(with({}))).sparse)
      local c = assert(schema.normalize(with({ sparse = { pattern = "strided", stride = 128.0 } })))
      assert.same({ pattern = "strided", stride = 128 }, c.sparse)
      assert.equal(true, c.causal)
      assert.same({ left = -1, right = 0 }, c.window)
      c = assert(schema.normalize(with({ sparse = { pattern = "fixed", block = 16, summary = 16 },
        causal = "top_left", sliding_window = 40, global_tokens = 2 })))
      assert.same({ pattern = "fixed", block = 16, summary = 16 }, c.sparse)
      assert.equal("top_left", c.causal)
      assert.same({ left = 39, right = 0 }, c.window)
      assert.same({ pattern = "fixed", block = 1, summary = 1 },
        assert(schema.normalize(with({ sparse = { pattern = "fixed", block = 1, summary = 1 } }))).sparse)
    end)

    it("one-line errors: the shape, the pattern, the integers, unknown fields", function()
      for _, bad in ipairs({ "strided", 8, true }) do
        rejects_key(with({ sparse = bad }), "sparse", "must be a table")
      end
      rejects_key(with({ sparse = {} }), "sparse", "'sparse.pattern' must be \"strided\" or \"fixed\", got nothing")
      rejects_key(with({ sparse = { pattern = "dense" } }), "sparse", 'got "dense"')
      rejects_key(with({ sparse = { pattern = "strided" } }), "sparse", "'sparse.stride' is required")
      for _, bad in ipairs({ 0, -3, 2 ^ 30 + 1 }) do
        rejects_key(with({ sparse = { pattern = "strided", stride = bad } }), "sparse", "1..1073741824")
      end
      rejects_key(with({ sparse = { pattern = "strided", stride = 2.5 } }), "sparse",
        "'sparse.stride' must be an integer")
      rejects_key(with({ sparse = { pattern = "fixed", block = 8 } }), "sparse", "'sparse.summary' is required", "1..8")
      rejects_key(with({ sparse = { pattern = "fixed", block = 8, summary = 9 } }), "sparse",
        "'sparse.summary' must be in 1..8")
      rejects_key(with({ sparse = { pattern = "fixed", block = 8, summary = 0 } }), "sparse", "1..8")
      rejects_key(with({ sparse = { pattern = "fixed", summary = 1 } }), "sparse", "'sparse.block' is required")
      local msg = rejects_key(with({ sparse = { pattern = "strided", strid = 4 } }), "sparse",
        "unknown field 'strid'", "did you mean 'stride'?")
      assert.is_nil(msg:find("\n", 1, true))
      rejects_key(with({ sparse = { pattern = "strided", stride = 4, summary = 1 } }), "sparse",
        "unknown field 'summary'")
      rejects_key(with({ sparse = { pattern = "fixed", block = 8, sumary = 1 } }), "sparse", "did you mean 'summary'?")
    end)
  end)

  describe("rel_bias", function()
    it("normalizes T5's defaults and keeps clipped distances", function()
      local c = assert(schema.normalize(with({ rel_bias = { kind = "t5" } })))
      assert.same({ kind = "t5", buckets = 32, max_distance = 128, bidirectional = true }, c.rel_bias)
      c = assert(schema.normalize(with({ rel_bias = { kind = "t5", buckets = 7, bidirectional = false,
        max_distance = 4 } })))
      assert.same({ kind = "t5", buckets = 7, max_distance = 4, bidirectional = false }, c.rel_bias)
      assert.same({ kind = "clipped", max_distance = 0 },
        assert(schema.normalize(with({ rel_bias = { kind = "clipped", max_distance = 0 } }))).rel_bias)
      assert.is_nil(assert(schema.normalize(with({}))).rel_bias)
    end)

    it("one-line errors: the shape, the kind, the integers, unknown fields", function()
      rejects_key(with({ rel_bias = "t5" }), "rel_bias", "must be a table")
      rejects_key(with({ rel_bias = {} }), "rel_bias", "'rel_bias.kind' must be \"t5\" or \"clipped\", got nothing")
      rejects_key(with({ rel_bias = { kind = "alibi" } }), "rel_bias", 'got "alibi"')
      rejects_key(with({ rel_bias = { kind = "clipped" } }), "rel_bias", "'rel_bias.max_distance' is required")
      rejects_key(with({ rel_bias = { kind = "clipped", max_distance = -1 } }), "rel_bias", "0..65536")
      rejects_key(with({ rel_bias = { kind = "t5", buckets = 31 } }), "rel_bias", "must be even")
      rejects_key(with({ rel_bias = { kind = "t5", buckets = 2 } }), "rel_bias", "4..1024")
      rejects_key(with({ rel_bias = { kind = "t5", max_distance = 8 } }), "rel_bias", "9..1048576")
      rejects_key(with({ rel_bias = { kind = "t5", bidirectional = 1 } }), "rel_bias", "'rel_bias.bidirectional'")
      local msg = rejects_key(with({ rel_bias = { kind = "clipped", max_distance = 3, buckets = 4 } }), "rel_bias",
        "unknown field 'buckets'")
      assert.is_nil(msg:find("\n", 1, true))
    end)
  end)

  describe("errors", function()
    it("unknown key: did you mean", function()
      local key, msg = rejects(with({ head_dmi = 64 }))
      assert.equal("head_dmi", key)
      assert.truthy(msg:find("unknown key 'head_dmi'", 1, true), msg)
      assert.truthy(msg:find("did you mean 'head_dim'?", 1, true), msg)
      key, msg = rejects(with({ casual = true }))
      assert.equal("casual", key)
      assert.truthy(msg:find("did you mean 'causal'?", 1, true), msg)
      key, msg = rejects(with({ Heads_KV = 2 }))
      assert.equal("Heads_KV", key)
      assert.truthy(msg:find("did you mean 'heads_kv'?", 1, true), msg)
    end)

    it("unknown key far from every known one lists the known keys", function()
      local key, msg = rejects(with({ zzzzzzzzzzzz = 1 }))
      assert.equal("zzzzzzzzzzzz", key)
      assert.is_nil(msg:find("did you mean", 1, true))
      assert.truthy(msg:find("known keys: name, kind,", 1, true), msg)
    end)

    it("a non-string key is an unknown key", function()
      local key, msg = rejects(with({ [1] = 64 }))
      assert.equal(1, key)
      assert.truthy(msg:find("unknown key '1'", 1, true), msg)
    end)

    it("missing name, heads_q, head_dim", function()
      rejects_key(without("name"), "name", "required", "got nothing")
      rejects_key(without("heads_q"), "heads_q", "required")
      rejects_key(without("head_dim"), "head_dim", "required")
    end)

    it("name must be a C identifier of at most 64 characters", function()
      for _, bad in ipairs({ "", "1abc", "my-model", "a b", "a.b", "é", ("a"):rep(65) }) do
        rejects_key(with({ name = bad }), "name", "C identifier")
      end
      rejects_key(with({ name = 42 }), "name", "C identifier")
      rejects_key(with({ name = true }), "name", "C identifier")
    end)

    it("names that would clash with the runtime's headers or a vendored folder's files", function()
      local taken = { "runtime", "Runtime", "reference", "npy", "verify", "attn_runtime", "attngen", "example" }
      for _, bad in ipairs(taken) do
        rejects_key(with({ name = bad }), "name", "choose another")
      end
      assert.truthy(schema.normalize(with({ name = "runtime2" })))
    end)

    it("a value with a newline still gives a one-line message", function()
      rejects_key(with({ name = "a\nb" }), "name")
      rejects_key(with({ mask = "bool\n" }), "mask")
      rejects(with({ ["x\ny"] = 1 }))
    end)

    it("heads_kv must divide heads_q", function()
      rejects_key(with({ heads_q = 8, heads_kv = 3 }), "heads_kv", "must divide 'heads_q'", "(3)", "(8)")
      rejects_key(with({ heads_q = 4, heads_kv = 8 }), "heads_kv", "must divide")
      assert.truthy(schema.normalize(with({ heads_q = 8, heads_kv = 1 })))
      assert.truthy(schema.normalize(with({ heads_q = 71, heads_kv = 1 })))
    end)

    it("heads must be >= 1", function()
      rejects_key(with({ heads_q = 0 }), "heads_q", "got 0")
      rejects_key(with({ heads_kv = 0 }), "heads_kv")
      rejects_key(with({ heads_q = -4 }), "heads_q")
    end)

    it("head dims must be in 1..512", function()
      rejects_key(with({ head_dim = 0 }), "head_dim", "1..512", "got 0")
      rejects_key(with({ head_dim = 513 }), "head_dim", "1..512", "got 513")
      rejects_key(with({ head_dim_v = 0 }), "head_dim_v", "1..512")
      rejects_key(with({ head_dim_v = 513 }), "head_dim_v", "1..512")
    end)

    it("integers must be integers", function()
      rejects_key(with({ heads_q = 2.5 }), "heads_q", "integer", "2.5")
      rejects_key(with({ heads_kv = 0.5 }), "heads_kv", "integer")
      rejects_key(with({ head_dim = 63.9 }), "head_dim", "integer")
      rejects_key(with({ head_dim_v = 1 / 0 }), "head_dim_v", "integer")
      rejects_key(with({ head_dim = 0 / 0 }), "head_dim", "integer")
      rejects_key(with({ global_tokens = 1.5 }), "global_tokens", "integer")
      rejects_key(with({ global_tokens = -1 }), "global_tokens")
    end)

    it("wrong types", function()
      rejects_key(with({ heads_q = "8" }), "heads_q", "integer")
      rejects_key(with({ head_dim = { 64 } }), "head_dim", "integer")
      rejects_key(with({ causal = "yes" }), "causal", "true or false")
      rejects_key(with({ causal = 1 }), "causal", "true or false")
      rejects_key(with({ padding = "true" }), "padding", "true or false")
      rejects_key(with({ alibi = 0 }), "alibi", "true or false")
      rejects_key(with({ window = 4 }), "window", "table")
      rejects_key(with({ isa = "avx2" }), "isa", "list")
      rejects_key(with({ isa = {} }), "isa", "non-empty list")
      rejects_key(with({ tile = 64 }), "tile", "\"auto\" or {q=int, kv=int}")
      rejects_key(with({ tile = "big" }), "tile", "\"auto\"")
      rejects_key(with({ mask = true }), "mask")
      rejects_key(with({ kind = 1 }), "kind")
    end)

    it("scale and softcap must be finite numbers > 0", function()
      for _, key in ipairs({ "scale", "softcap" }) do
        for _, bad in ipairs({ 0, -1, 1 / 0, 0 / 0, "0.5", true }) do
          rejects_key(with({ [key] = bad }), key, "finite number > 0")
        end
      end
      assert.equal(0.01, assert(schema.normalize(with({ scale = 0.01 }))).scale)
      assert.equal(50, assert(schema.normalize(with({ softcap = 50 }))).softcap)
    end)

    it("mask: none, bool or bias", function()
      for _, ok in ipairs({ "none", "bool", "bias" }) do
        assert.equal(ok, assert(schema.normalize(with({ mask = ok }))).mask)
      end
      rejects_key(with({ mask = "boolean" }), "mask", "none, bool, bias", "boolean")
    end)

    it("dtype: one type, or one per tensor (missing ones f32, three equal ones a string)", function()
      assert.equal("bf16", assert(schema.normalize(with({ dtype = "bf16" }))).dtype)
      assert.equal("f16", assert(schema.normalize(with({ dtype = "f16" }))).dtype)
      assert.same({ q = "f32", kv = "f16", o = "f32" },
        assert(schema.normalize(with({ dtype = { kv = "f16" } }))).dtype)
      assert.equal("bf16", assert(schema.normalize(with({ dtype = { q = "bf16", kv = "bf16", o = "bf16" } }))).dtype)
      rejects_key(with({ dtype = { kv = "f8" } }), "dtype", "dtype.kv", "f8")
      rejects_key(with({ dtype = { k = "f16" } }), "dtype", "unknown field")
      local msg = rejects_key(with({ dtype = "f64" }), "dtype", "f32", "f64")
      assert.is_nil(msg:find("not implemented", 1, true))
    end)

    it("dtype: K/V may be llama.cpp's q8_0 or q4_0 blocks, with D and Dv multiples of 32", function()
      local t = assert(schema.normalize(with({ head_dim = 64, dtype = { kv = "q8_0" } }))).dtype
      assert.same({ q = "f32", kv = "q8_0", o = "f32" }, t)
      assert.equal("q4_0", assert(schema.normalize(with({ head_dim = 32, head_dim_v = 96,
        dtype = { q = "bf16", kv = "q4_0", o = "f16" } }))).dtype.kv)
      rejects_key(with({ head_dim = 48, dtype = { kv = "q8_0" } }), "dtype", "multiples of 32", "48")
      rejects_key(with({ head_dim = 64, head_dim_v = 80, dtype = { kv = "q4_0" } }), "dtype", "multiples of 32", "80")
      rejects_key(with({ head_dim = 64, dtype = "q8_0" }), "dtype", "K/V type", "dtype = {kv = \"q8_0\"}")
      rejects_key(with({ head_dim = 64, dtype = { q = "q8_0" } }), "dtype", "dtype.q", "q8_0")
      rejects_key(with({ head_dim = 64, matmul = "bf16", dtype = { q = "bf16", kv = "q8_0" } }), "matmul",
        "q8_0 cache is read with matmul = \"f32\"")
      local ok, key, err = schema.normalize({ name = "x", kind = "linear", heads_q = 2, head_dim = 64,
        dtype = { kv = "q8_0" } })
      assert.is_nil(ok)
      assert.equal("dtype", key)
      assert.truthy(err:find("sdpa", 1, true))
    end)

    it("matmul: f32 by default; bf16 needs bf16 Q and K/V", function()
      assert.equal("f32", assert(schema.normalize(with({}))).matmul)
      rejects_key(with({ matmul = "bf16", dtype = { kv = "f16" } }), "matmul", "needs Q and K/V stored as bf16")
      rejects_key(with({ matmul = "bf16", dtype = { q = "f32", kv = "bf16" } }), "matmul", "got Q f32")
      assert.equal("bf16", assert(schema.normalize(with({ matmul = "bf16", dtype = "bf16" }))).matmul)
      local mixed = with({ matmul = "bf16", dtype = { q = "bf16", kv = "bf16" } })
      assert.equal("bf16", assert(schema.normalize(mixed)).matmul)
      rejects_key(with({ matmul = "f16" }), "matmul", "f32", "bf16", "int8")
    end)

    it("matmul: int8 needs a block cache (q8_0 or q4_0) and the sdpa family", function()
      assert.equal("int8", assert(schema.normalize(with({ head_dim = 64, matmul = "int8",
        dtype = { kv = "q8_0" } }))).matmul)
      assert.equal("int8", assert(schema.normalize(with({ head_dim = 32, matmul = "int8",
        dtype = { q = "bf16", kv = "q4_0" } }))).matmul)
      rejects_key(with({ matmul = "int8" }), "matmul", "dtype.kv = q8_0, q4_0", "got f32")
      rejects_key(with({ head_dim = 64, matmul = "int8", dtype = { kv = "f16" } }), "matmul", "got f16")
      local ok, key, err = schema.normalize({ name = "x", kind = "linear", heads_q = 2, head_dim = 64,
        matmul = "int8" })
      assert.is_nil(ok)
      assert.equal("matmul", key)
      assert.truthy(err:find("sdpa", 1, true))
    end)

    it("isa: the avx512bf16 variant only for matmul = \"bf16\", first by default", function()
      assert.same({ "avx512", "avx2", "neon", "scalar" }, assert(schema.normalize(with({}))).isa)
      assert.same({ "avx512bf16", "avx512", "avx2", "neon", "scalar" },
        assert(schema.normalize(with({ matmul = "bf16", dtype = "bf16" }))).isa)
      assert.same({ "avx512bf16", "scalar" },
        assert(schema.normalize(with({ matmul = "bf16", dtype = "bf16", isa = { "scalar", "avx512bf16" } }))).isa)
      rejects_key(with({ isa = { "avx512bf16", "avx512" } }), "isa", "avx512bf16", "needs that 'matmul'")
    end)

    it("kind: sdpa, linear, additive, luong", function()
      rejects_key(with({ kind = "flash" }), "kind", "sdpa, linear, additive, luong", "flash")
    end)

    it("kind = additive: its keys, defaults and errors", function()
      local function add(t)
        local raw = { name = "a", kind = "additive", query_dim = 10, key_dim = 20, attn_dim = 30 }
        for k, v in pairs(t or {}) do raw[k] = v end
        return raw
      end
      local c = assert(schema.normalize(add()))
      assert.equal("additive", c.kind)
      assert.same({ 10, 20, 30 }, { c.query_dim, c.key_dim, c.attn_dim })
      assert.is_false(c.bias)
      assert.is_false(c.padding)
      assert.equal("none", c.mask)
      assert.equal("auto", c.tile)
      assert.same({ "name", "kind", "query_dim", "key_dim", "attn_dim", "bias", "padding", "mask", "dtype",
        "matmul", "isa", "tile" }, schema.order_of("additive"))
      assert.equal("bool", assert(schema.normalize(add({ mask = "bool", bias = true }))).mask)
      for _, k in ipairs({ "query_dim", "key_dim", "attn_dim" }) do
        rejects_key(add({ [k] = false }), k, "integer in 1..16384")
        local raw = add()
        raw[k] = nil
        rejects_key(raw, k, "is required")
      end
      rejects_key(add({ query_dim = 16385 }), "query_dim", "1..16384")
      rejects_key(add({ mask = "bias" }), "mask", "none, bool", "no additive bias")
      rejects_key(add({ bias = "yes" }), "bias", "true or false")
      rejects_key(add({ heads_q = 4 }), "heads_q", "unknown key")
      rejects_key(add({ tile = { q = 16, kv = 16 } }), "tile", "has no tiles")
      rejects_key(add({ dtype = "bf16", matmul = "bf16" }), "matmul", "sdpa family")
      assert.same({ q = "f32", kv = "f16", o = "f32" }, assert(schema.normalize(add({ dtype = { kv = "f16" } }))).dtype)
    end)

    it("kind = luong: score and the keys that depend on it", function()
      local function lu(t)
        local raw = { name = "l", kind = "luong", query_dim = 16 }
        for k, v in pairs(t or {}) do raw[k] = v end
        return raw
      end
      local dot = assert(schema.normalize(lu()))
      assert.equal("dot", dot.score)
      assert.equal(16, dot.key_dim)
      assert.is_false(dot.bias)
      assert.is_nil(dot.attn_dim)
      rejects_key(lu({ key_dim = 8 }), "key_dim", "must equal 'query_dim'")
      local general = assert(schema.normalize(lu({ score = "general", key_dim = 8 })))
      assert.equal(8, general.key_dim)
      rejects_key(lu({ score = "general", attn_dim = 8 }), "attn_dim", "belongs to score \"concat\"")
      rejects_key(lu({ bias = true }), "bias", "belongs to score \"concat\"")
      local concat = assert(schema.normalize(lu({ score = "concat", attn_dim = 12 })))
      assert.is_true(concat.bias)
      assert.equal(12, concat.attn_dim)
      assert.is_false(assert(schema.normalize(lu({ score = "concat", attn_dim = 12, bias = false }))).bias)
      rejects_key(lu({ score = "concat" }), "attn_dim", "is required")
      rejects_key(lu({ score = "bilinear" }), "score", "dot, general, concat", "bilinear")
    end)

    it("kind = linear: its keys, defaults and errors", function()
      local c = assert(schema.normalize(with({ kind = "linear", heads_kv = 2, causal = "top_left" })))
      assert.equal("linear", c.kind)
      assert.equal(2, c.heads_kv)
      assert.equal(64, c.head_dim_v)
      assert.equal("top_left", c.causal)
      assert.equal("elu1", c.feature_map)
      assert.equal(1e-6, c.eps)
      assert.is_false(c.state)
      assert.is_false(c.padding)
      assert.same({ "name", "kind", "heads_q", "heads_kv", "head_dim", "head_dim_v", "causal", "padding",
        "feature_map", "eps", "state", "dtype", "matmul", "isa", "tile" }, schema.order_of("linear"))
      assert.is_true(assert(schema.normalize(with({ kind = "linear", causal = "bottom_right" }))).causal)
      -- the sdpa family's mask keys are not linear attention's
      rejects_key(with({ kind = "linear", window = { left = 3 } }), "window", "unknown key")
      rejects_key(with({ kind = "linear", scale = 0.5 }), "scale", "unknown key")
      rejects_key(with({ kind = "linear", feature_map = "relu" }), "feature_map", "elu1", "relu")
      rejects_key(with({ kind = "linear", eps = 0 }), "eps", "> 0")
      rejects_key(with({ kind = "linear", eps = 0 / 0 }), "eps")
      rejects_key(with({ kind = "linear", state = 1 }), "state", "true or false")
      rejects_key(with({ kind = "linear", heads_kv = 3 }), "heads_kv", "divide")
      rejects_key(with({ kind = "linear", dtype = "bf16", matmul = "bf16" }), "matmul", "sdpa family")
      assert.truthy(schema.normalize(with({ kind = "linear", dtype = { kv = "f16" } })))
    end)

    it("isa entries must be known ISAs", function()
      local key, msg = rejects(with({ isa = { "avx2", "avx513" } }))
      assert.equal("isa", key)
      assert.truthy(msg:find("unknown ISA 'avx513'", 1, true), msg)
      assert.truthy(msg:find("avx512, avx2, neon, scalar", 1, true), msg)
      assert.truthy(msg:find("did you mean 'avx512'?", 1, true), msg)
      rejects_key(with({ isa = { "sse2" } }), "isa", "unknown ISA 'sse2'")
      rejects_key(with({ isa = { 1 } }), "isa", "unknown ISA '1'")
      rejects_key(with({ isa = { "AVX2" } }), "isa", "did you mean 'avx2'?")
    end)

    it("isa keeps each listed ISA once, best first", function()
      local cfg = assert(schema.normalize(with({ isa = { "scalar", "avx512", "scalar" } })))
      assert.same({ "avx512", "scalar" }, cfg.isa)
      assert.same({ "neon" }, assert(schema.normalize(with({ isa = { "neon" } }))).isa)
    end)

    it("tile.kv must be a multiple of 16, tile.q in 1..1024", function()
      rejects_key(with({ tile = { q = 32, kv = 40 } }), "tile", "multiple of 16", "40")
      rejects_key(with({ tile = { q = 32, kv = 8 } }), "tile", "tile.kv")
      rejects_key(with({ tile = { q = 0, kv = 64 } }), "tile", "tile.q")
      rejects_key(with({ tile = { q = 1025, kv = 64 } }), "tile", "tile.q")
      rejects_key(with({ tile = { q = 32 } }), "tile", "tile.kv")
      rejects_key(with({ tile = { kv = 32 } }), "tile", "tile.q")
      rejects_key(with({ tile = { q = 32, kv = 64, kb = 1 } }), "tile", "unknown field 'kb'", "did you mean 'kv'?")
    end)

    it("window: only left and right, integers >= -1", function()
      rejects_key(with({ window = { left = 4, rigth = 0 } }), "window", "unknown field 'rigth'",
        "left, right", "did you mean 'right'?")
      rejects_key(with({ window = { 4, 0 } }), "window", "unknown field '1'")
      rejects_key(with({ window = { left = -2 } }), "window", "window.left")
      rejects_key(with({ window = { left = 1, right = 0.5 } }), "window", "window.right")
      rejects_key(with({ window = { left = "3" } }), "window", "window.left")
    end)
  end)

  describe("suggest", function()
    it("finds the closest key within a small distance", function()
      assert.equal("head_dim", schema.suggest("head_dmi"))
      assert.equal("heads_q", schema.suggest("heads_g"))
      assert.equal("sliding_window", schema.suggest("slidingwindow"))
      assert.is_nil(schema.suggest("completely_different_thing"))
    end)

    it("searches a given list", function()
      assert.equal("gpt2", schema.suggest("gtp2", { "gpt2", "llama3_8b" }))
      assert.is_nil(schema.suggest("x", {}))
    end)
  end)
end)
