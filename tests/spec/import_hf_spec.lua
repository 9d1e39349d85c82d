-- attngen import-hf: Hugging Face config.json -> attngen configs.  The
-- stored config.json files of tests/hf/ import to the presets' attention,
-- the sliding-window conversion is pinned against a literal mask, every
-- family's keys and aliases are read, and user errors are one line, exit
-- code 2, with nothing written.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local json = require("dkjson")
local hf = require("import.hf")
local hf_json = require("import.json")
local config = require("config")
local presets = require("presets")
local planner = require("planner")
local util = require("util")

local EXIT_USAGE = 2
local HF_DIR = helper.root .. "/tests/hf"

describe("import-hf", function()
  local tmp

  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  local nfolders = 0
  local function folder()
    nfolders = nfolders + 1
    local d = ("%s/d%d"):format(tmp, nfolders)
    assert(require("pl.dir").makepath(d))
    return d
  end

  --- Imports JSON text in-process; returns the result or nil, err.
  local function import_text(text, name, isa, common_keys)
    local j, err = hf_json.decode(text, "t.json")
    if not j then return nil, err end
    return hf.import(j, { file = "t.json", text = text, name = name or "t", isa = isa,
      command = "attngen import-hf t.json", common_keys = common_keys })
  end

  --- Imports a Lua table encoded as JSON.
  local function import_table(t, name, isa, common_keys)
    return import_text(json.encode(t), name, isa, common_keys)
  end

  --- Writes each imported config into a fresh folder and loads it back
  -- through presets.load (the sandboxed loader and the schema), then plans
  -- it.  Returns name -> normalized config, and name -> text.
  local function load_all(res)
    assert.is_table(res)
    local d = folder()
    local cfgs, texts = {}, {}
    for _, c in ipairs(res.configs) do
      local p = d .. "/" .. c.name .. ".lua"
      helper.write_file(p, c.text)
      local cfg, err = presets.load(p)
      assert.is_table(cfg, err)
      assert.equal(c.name, cfg.name)
      assert.is_table(planner.plan(cfg))
      cfgs[c.name], texts[c.name] = cfg, c.text
    end
    return cfgs, texts
  end

  local function names_of(res)
    local t = {}
    for i, c in ipairs(res.configs) do t[i] = c.name end
    return t
  end

  --- The attention a config describes, without its name.
  local function semantics(cfg)
    local t = {}
    for k, v in pairs(cfg) do
      if k ~= "name" then t[k] = v end
    end
    return t
  end

  local function preset(name)
    local cfg, err = presets.load(name)
    assert.is_table(cfg, err)
    return cfg
  end

  --- Runs attngen expecting a usage error: exit 2, one line on stderr
  -- containing each given substring.
  local function fails(args, opts, ...)
    local code, out, err = helper.attngen(args, opts)
    assert.equal(EXIT_USAGE, code, "stderr: " .. err)
    assert.equal("attngen: ", err:sub(1, 9), err)
    assert.equal(1, #helper.lines(err), "not one line: " .. err)
    for _, s in ipairs({ ... }) do
      assert.truthy(err:find(s, 1, true), ("expected '%s' in: %s"):format(s, err))
    end
    assert.equal("", out)
    return err
  end

  describe("the stored config.json files", function()
    -- file -> config name -> expected attention (window = window.left, -1 = none)
    local expected = {
      llama3_8b = { llama3_8b = { heads_q = 32, heads_kv = 8, head_dim = 128, causal = true, window = -1 } },
      mistral_7b = { mistral_7b = { heads_q = 32, heads_kv = 8, head_dim = 128, causal = true, window = 4095 } },
      qwen2_7b = { qwen2_7b = { heads_q = 28, heads_kv = 4, head_dim = 128, causal = true, window = -1 } },
      gpt_neox_20b = { gpt_neox_20b = { heads_q = 64, heads_kv = 64, head_dim = 96, causal = true, window = -1 } },
      gemma2_9b = {
        gemma2_9b_local = { heads_q = 16, heads_kv = 8, head_dim = 256, causal = true, window = 4095,
          softcap = 50, scale = 1 / 16 },
        gemma2_9b_global = { heads_q = 16, heads_kv = 8, head_dim = 256, causal = true, window = -1,
          softcap = 50, scale = 1 / 16 },
      },
      phi3_mini_4k_instruct = {
        phi3_mini_4k_instruct = { heads_q = 32, heads_kv = 32, head_dim = 96, causal = true, window = 2046 },
      },
      falcon_7b = { falcon_7b = { heads_q = 71, heads_kv = 1, head_dim = 64, causal = true, window = -1 } },
      gpt2 = { gpt2 = { heads_q = 12, heads_kv = 12, head_dim = 64, causal = true, window = -1 } },
      bert_base_uncased = {
        bert_base_uncased = { heads_q = 12, heads_kv = 12, head_dim = 64, causal = false, window = -1,
          padding = true },
      },
      gpt_oss_20b = {
        gpt_oss_20b_local = { heads_q = 64, heads_kv = 8, head_dim = 64, causal = true, window = 127, sinks = true },
        gpt_oss_20b_global = { heads_q = 64, heads_kv = 8, head_dim = 64, causal = true, window = -1, sinks = true },
      },
      gemma3_27b = {
        gemma3_27b_local = { heads_q = 32, heads_kv = 16, head_dim = 128, causal = true, window = 1023,
          scale = 1 / math.sqrt(168), qk_norm = { eps = 1e-6, offset = 1 } },
        gemma3_27b_global = { heads_q = 32, heads_kv = 16, head_dim = 128, causal = true, window = -1,
          scale = 1 / math.sqrt(168), qk_norm = { eps = 1e-6, offset = 1 } },
      },
      qwen3_8b = { qwen3_8b = { heads_q = 32, heads_kv = 8, head_dim = 128, causal = true, window = -1,
        qk_norm = { eps = 1e-6, offset = 0 } } },
      t5_small = {
        t5_small_encoder = { heads_q = 8, heads_kv = 8, head_dim = 64, causal = false, window = -1, scale = 1,
          padding = true },
        t5_small_decoder = { heads_q = 8, heads_kv = 8, head_dim = 64, causal = true, window = -1, scale = 1 },
        t5_small_cross = { heads_q = 8, heads_kv = 8, head_dim = 64, causal = false, window = -1, scale = 1,
          padding = true },
      },
      flan_t5_base = {
        flan_t5_base_encoder = { heads_q = 12, heads_kv = 12, head_dim = 64, causal = false, window = -1, scale = 1,
          padding = true },
        flan_t5_base_decoder = { heads_q = 12, heads_kv = 12, head_dim = 64, causal = true, window = -1, scale = 1 },
        flan_t5_base_cross = { heads_q = 12, heads_kv = 12, head_dim = 64, causal = false, window = -1, scale = 1,
          padding = true },
      },
    }

    -- the MLA models: {decode, prefill} = {heads_q, heads_kv, D, Dv}, and yarn's factor
    local mla_expected = {
      deepseek_v3 = { heads = 128, factor = 40 },
      kimi_k2 = { heads = 64, factor = 32 },
    }

    local imported = {}
    local function import_file(stem)
      if not imported[stem] then
        local file = HF_DIR .. "/" .. stem .. ".json"
        local text = assert(helper.read_file(file), file)
        local j, err = hf_json.decode(text, file)
        assert.is_table(j, err)
        local res, ierr = hf.import(j, { file = "tests/hf/" .. stem .. ".json", text = text, name = stem,
          command = "attngen import-hf tests/hf/" .. stem .. ".json" })
        assert.is_table(res, ierr)
        imported[stem] = res
      end
      return imported[stem]
    end

    it("are all listed in tests/hf/README.md", function()
      local readme = assert(helper.read_file(HF_DIR .. "/README.md"))
      local n = 0
      for _, t in ipairs({ expected, mla_expected }) do
        for stem in pairs(t) do
          n = n + 1
          assert.truthy(readme:find(stem .. ".json", 1, true), stem)
          assert.is_truthy(helper.read_file(HF_DIR .. "/" .. stem .. ".json"), stem)
        end
      end
      local stored = 0
      local ls = assert(io.popen("ls " .. HF_DIR))
      for file in ls:lines() do
        if file:match("%.json$") then stored = stored + 1 end
      end
      ls:close()
      assert.equal(stored, n) -- every stored file has its expectations here
    end)

    for stem, want in pairs(expected) do
      it(stem .. ".json imports to the expected heads, dims, window, softcap, scale and mask", function()
        local cfgs = load_all(import_file(stem))
        local n = 0
        for name, e in pairs(want) do
          n = n + 1
          local cfg = cfgs[name]
          assert.is_table(cfg, "no config " .. name)
          assert.equal(e.heads_q, cfg.heads_q)
          assert.equal(e.heads_kv, cfg.heads_kv)
          assert.equal(e.head_dim, cfg.head_dim)
          assert.equal(e.head_dim, cfg.head_dim_v)
          assert.equal(e.causal, cfg.causal)
          assert.equal(e.window, cfg.window.left)
          assert.equal(e.causal and 0 or -1, cfg.window.right)
          assert.equal(e.softcap, cfg.softcap)
          assert.equal(e.scale or 1 / math.sqrt(e.head_dim), cfg.scale)
          assert.equal(e.padding or false, cfg.padding)
          assert.equal(false, cfg.alibi)
          assert.equal(0, cfg.global_tokens)
          assert.equal("none", cfg.mask)
          assert.equal(e.sinks, cfg.sinks)
          assert.same(e.qk_norm, cfg.qk_norm)
          assert.is_nil(cfg.temperature)
        end
        local count = 0
        for _ in pairs(cfgs) do count = count + 1 end
        assert.equal(n, count)
      end)
    end

    for stem, e in pairs(mla_expected) do
      it(stem .. ".json gives the absorbed decode (shared_kv, D 576, Dv 512, one kv head) and the prefill "
        .. "(D 192, Dv 128), both scaled by mscale^2 / sqrt(192)", function()
        local res = import_file(stem)
        assert.same({ stem .. "_decode", stem .. "_prefill" }, names_of(res))
        local cfgs, texts = load_all(res)
        local m = 0.1 * 1 * math.log(e.factor) + 1
        local want_scale = 1 / math.sqrt(192) * m * m
        local dec, pre = cfgs[stem .. "_decode"], cfgs[stem .. "_prefill"]
        assert.equal(e.heads, dec.heads_q)
        assert.equal(1, dec.heads_kv)
        assert.equal(576, dec.head_dim)
        assert.equal(512, dec.head_dim_v)
        assert.is_true(dec.shared_kv)
        assert.equal(e.heads, pre.heads_q)
        assert.equal(e.heads, pre.heads_kv)
        assert.equal(192, pre.head_dim)
        assert.equal(128, pre.head_dim_v)
        assert.is_nil(pre.shared_kv)
        for _, cfg in ipairs({ dec, pre }) do
          assert.is_true(cfg.causal)
          assert.equal(-1, cfg.window.left)
          assert.is_nil(cfg.softcap)
          assert.is_true(math.abs(cfg.scale - want_scale) <= 1e-15 * want_scale, tostring(cfg.scale))
        end
        -- the scale is above the plain 1 / sqrt(192): yarn's mscale, squared
        assert.is_true(dec.scale > 1.8 / math.sqrt(192))
        assert.truthy(texts[stem .. "_decode"]:find("shared_kv = true, -- V is the latent c_KV", 1, true))
      end)
    end

    it("Gemma-3 27B: every sixth layer global (sliding_window_pattern's default), query_pre_attn_scalar 168",
      function()
      local res = import_file("gemma3_27b")
      assert.same({ "gemma3_27b_local", "gemma3_27b_global" }, names_of(res))
      local _, texts = load_all(res)
      assert.truthy(texts.gemma3_27b_local:find("Sliding-window layers: 52 of 62", 1, true))
      assert.truthy(texts.gemma3_27b_global:find("Full-attention layers: 10 of 62 (5, 11, ..., 59).", 1, true))
      assert.truthy(texts.gemma3_27b_local:find("sliding_window_pattern = absent (Gemma-3 default: 6)", 1, true))
      assert.truthy(texts.gemma3_27b_global:find("rope_local_base_freq = absent (Gemma-3 default: 10000", 1, true))
    end)

    it("Qwen3-8B: GQA 32 / 8, no window (use_sliding_window = false), q_norm and k_norm as qk_norm", function()
      local _, texts = load_all(import_file("qwen3_8b"))
      assert.is_nil(texts.qwen3_8b:find("\n  sliding_window =", 1, true))
      assert.truthy(texts.qwen3_8b:find("Qwen3 normalizes Q and K (RMS norm times w: q_norm and k_norm) in the kernel",
        1, true))
      assert.truthy(texts.qwen3_8b:find("\n  qk_norm = { eps = 1e-06 }, -- q_norm, k_norm: eps from rms_norm_eps",
        1, true))
      assert.truthy(texts.qwen3_8b:find("rms_norm_eps = 1e-06 (the eps of q_norm and k_norm)", 1, true))
      -- Gemma-3: the weights as 1 + w, rms_norm_eps absent (its default)
      local _, g = load_all(import_file("gemma3_27b"))
      assert.truthy(g.gemma3_27b_local:find("\n  qk_norm = { eps = 1e-06, offset = 1 },", 1, true))
      assert.truthy(g.gemma3_27b_global:find("rms_norm_eps = absent (Gemma-3 default: 1e-06", 1, true))
    end)

    it("match the presets of the same models (all but the name)", function()
      local pairs_ = {
        { "llama3_8b", "llama3_8b", "llama3_8b" },
        { "mistral_7b", "mistral_7b", "mistral_7b" },
        { "gemma2_9b", "gemma2_9b_local", "gemma2_9b_local" },
        { "gemma2_9b", "gemma2_9b_global", "gemma2_9b_global" },
        { "falcon_7b", "falcon_7b", "falcon_7b" },
        { "gpt2", "gpt2", "gpt2" },
        { "bert_base_uncased", "bert_base_uncased", "bert_base" },
        { "t5_small", "t5_small_encoder", "t5_small_encoder" },
        { "gemma3_27b", "gemma3_27b_local", "gemma3_27b_local" },
        { "gemma3_27b", "gemma3_27b_global", "gemma3_27b_global" },
        { "gpt_oss_20b", "gpt_oss_20b_local", "gpt_oss_20b_local" },
        { "gpt_oss_20b", "gpt_oss_20b_global", "gpt_oss_20b_global" },
        { "qwen3_8b", "qwen3_8b", "qwen3_8b" },
      }
      for _, p in ipairs(pairs_) do
        local cfgs = load_all(import_file(p[1]))
        assert.same(semantics(preset(p[3])), semantics(cfgs[p[2]]), p[2] .. " vs configs/" .. p[3] .. ".lua")
      end
    end)

    it("reads RoPE: rope_theta, the partial rotary keys, and rope_scaling (linear, llama3, other: a table)",
      function()
      local cfgs = load_all(import_file("gpt_neox_20b"))
      assert.same({ style = "neox", theta = 10000, dim = 24, table = false }, cfgs.gpt_neox_20b.rope)
      cfgs = load_all(import_file("qwen2_7b"))
      assert.same({ style = "neox", theta = 1000000, dim = 128, table = false }, cfgs.qwen2_7b.rope)
      local base = { model_type = "llama", num_attention_heads = 4, hidden_size = 256, rope_theta = 500000 }
      local function with_(t)
        local c = {}
        for k, v in pairs(base) do c[k] = v end
        for k, v in pairs(t) do c[k] = v end
        return c
      end
      cfgs = load_all(assert(import_table(with_({ rope_scaling = { rope_type = "llama3", factor = 8,
        low_freq_factor = 1, high_freq_factor = 4, original_max_position_embeddings = 8192 } }), "i")))
      assert.same({ type = "llama3", factor = 8, low_freq_factor = 1, high_freq_factor = 4,
        original_max_position = 8192 }, cfgs.i.rope.scaling)
      cfgs = load_all(assert(import_table(with_({ rope_scaling = { type = "linear", factor = 2 } }), "i")))
      assert.same({ type = "linear", factor = 2 }, cfgs.i.rope.scaling)
      cfgs = load_all(assert(import_table(with_({ rope_scaling = { rope_type = "dynamic", factor = 2 } }), "i")))
      assert.is_true(cfgs.i.rope.table)
      cfgs = load_all(assert(import_table(with_({ partial_rotary_factor = 0.5 }), "i")))
      assert.equal(32, cfgs.i.rope.dim)
      local res, err = import_table(with_({ rotary_dim = 7 }), "i")
      assert.is_nil(res)
      assert.truthy(err:find("must be even", 1, true), err)
    end)

    it("gpt-oss alternates sliding (even) and full (odd) layers, every one with sinks", function()
      local res = import_file("gpt_oss_20b")
      assert.same({ "gpt_oss_20b_local", "gpt_oss_20b_global" }, names_of(res))
      local _, texts = load_all(res)
      assert.truthy(texts.gpt_oss_20b_local:find("Sliding-window layers: 12 of 24 (0, 2, ..., 22).", 1, true))
      assert.truthy(texts.gpt_oss_20b_global:find("Full-attention layers: 12 of 24 (1, 3, ..., 23).", 1, true))
      for _, t in pairs(texts) do
        assert.truthy(t:find("  sinks = true, -- self_attn.sinks", 1, true), t)
        -- YaRN's angles are not the kernel's: the caller's table holds them
        assert.truthy(t:find('  rope = { style = "neox", table = true },', 1, true), t)
        assert.truthy(t:find("rope_scaling is of a type the kernel does not compute", 1, true), t)
      end
    end)

    it("T5 gives encoder, decoder and cross-attention configs, the self-attention ones with T5's bias", function()
      local res = import_file("t5_small")
      assert.same({ "t5_small_encoder", "t5_small_decoder", "t5_small_cross" }, names_of(res))
      local cfgs, texts = load_all(res)
      assert.same({ kind = "t5", buckets = 32, max_distance = 128, bidirectional = true },
        cfgs.t5_small_encoder.rel_bias)
      assert.same({ kind = "t5", buckets = 32, max_distance = 128, bidirectional = false },
        cfgs.t5_small_decoder.rel_bias)
      assert.is_nil(cfgs.t5_small_cross.rel_bias)
      -- t5-small's config.json has no relative_attention_max_distance: transformers' default
      assert.truthy(texts.t5_small_encoder:find("relative_attention_max_distance = absent (T5 default: 128)", 1,
        true), texts.t5_small_encoder)
      assert.truthy(texts.t5_small_encoder:find("head_dim = 64, -- d_kv\n", 1, true))
    end)

    it("Gemma-2 splits into local (even) and global (odd) layers, each naming the other", function()
      local res = import_file("gemma2_9b")
      assert.same({ "gemma2_9b_local", "gemma2_9b_global" }, names_of(res))
      local _, texts = load_all(res)
      assert.truthy(texts.gemma2_9b_local:find("Sliding-window layers: 21 of 42 (0, 2, ..., 40).", 1, true))
      assert.truthy(texts.gemma2_9b_global:find("Full-attention layers: 21 of 42 (1, 3, ..., 41).", 1, true))
      assert.truthy(texts.gemma2_9b_local:find("other attention: gemma2_9b_global.lua", 1, true))
      -- head_dim wins over hidden_size / heads (3584 / 16 = 224)
      assert.truthy(texts.gemma2_9b_local:find("head_dim = 256, -- head_dim\n", 1, true))
    end)

    it("Qwen2-7B does not use its sliding_window (use_sliding_window = false)", function()
      local _, texts = load_all(import_file("qwen2_7b"))
      assert.truthy(texts.qwen2_7b:find("sliding_window = 131072 (not used: use_sliding_window is not true)",
        1, true), texts.qwen2_7b)
      assert.is_nil(texts.qwen2_7b:find("\n  sliding_window =", 1, true))
    end)
  end)

  describe("the sliding-window conversion", function()
    -- transformers (masking_utils.sliding_window_overlay and the causal mask)
    -- with sliding_window = 3: query q sees key k iff k <= q and q - k < 3,
    -- written out for 6 tokens (rows: queries, columns: keys).
    local HF_W3 = {
      "100000",
      "110000",
      "111000",
      "011100",
      "001110",
      "000111",
    }

    --- The mask of a config per docs/config.md (semantics of the sdpa family) for Lq = Lk = n.
    local function attngen_mask(cfg, n)
      local rows = {}
      for i = 0, n - 1 do
        local p = i -- bottom-right alignment with Lq = Lk
        local row = {}
        for jk = 0, n - 1 do
          local ok = true
          if cfg.causal and jk > p then ok = false end
          if cfg.window.left >= 0 and jk < p - cfg.window.left then ok = false end
          if cfg.window.right >= 0 and jk > p + cfg.window.right then ok = false end
          row[#row + 1] = ok and "1" or "0"
        end
        rows[#rows + 1] = table.concat(row)
      end
      return rows
    end

    it("gives the mask transformers uses for the same sliding_window", function()
      local res = assert(import_table({ model_type = "mistral", num_attention_heads = 2, num_key_value_heads = 1,
        hidden_size = 8, sliding_window = 3 }, "w3"))
      local cfgs, texts = load_all(res)
      assert.same({ left = 2, right = 0 }, cfgs.w3.window)
      assert.same(HF_W3, attngen_mask(cfgs.w3, 6))
      -- the config says what the HF value was and how it was converted
      assert.truthy(texts.w3:find("HF sliding_window = 3: transformers keeps key k for query q when q - k < 3",
        1, true), texts.w3)
      assert.truthy(texts.w3:find("window_size = (2, 0)", 1, true))
      assert.truthy(texts.w3:find("window.left = 2", 1, true))
    end)

    it("sliding_window = 1 keeps only the current key", function()
      local cfgs = load_all(assert(import_table({ model_type = "mistral", num_attention_heads = 1,
        hidden_size = 4, sliding_window = 1 }, "w1")))
      assert.same({ "100", "010", "001" }, attngen_mask(cfgs.w1, 3))
    end)
  end)

  describe("chunked attention (Llama 4)", function()
    -- The shape of Llama-4-Scout's config.json (Llama4ForConditionalGeneration):
    -- the language model's keys in text_config, no_rope_layers empty (the
    -- default: every 4th layer NoPE), a vision_config with keys of the same names.
    local function llama4(tc_changes, top_changes)
      local tc = { attention_chunk_size = 8192, attn_temperature_tuning = 4, head_dim = 128, hidden_size = 5120,
        model_type = "llama4_text", no_rope_layers = setmetatable({}, { __jsontype = "array" }),
        num_attention_heads = 40, num_hidden_layers = 48, num_key_value_heads = 8, use_qk_norm = true }
      for k, v in pairs(tc_changes or {}) do tc[k] = v end
      local t = { architectures = { "Llama4ForConditionalGeneration" }, model_type = "llama4", text_config = tc,
        vision_config = { hidden_size = 1408, num_attention_heads = 16 } }
      for k, v in pairs(top_changes or {}) do t[k] = v end
      return t
    end

    -- transformers' chunked causal mask (masking_utils: causal and
    -- chunked_overlay) with attention_chunk_size = 3, for 7 tokens: query q
    -- sees key k iff k <= q and k // 3 == q // 3.
    local HF_C3 = { "1000000", "1100000", "1110000", "0001000", "0001100", "0001110", "0000001" }

    --- The mask of a causal config with chunks per docs/config.md for Lq = Lk = n.
    local function chunk_mask(cfg, n)
      local rows = {}
      for p = 0, n - 1 do -- bottom-right with Lq = Lk: p = i
        local row = {}
        for k = 0, n - 1 do
          local ok = k <= p and math.floor(k / cfg.chunk) == math.floor(p / cfg.chunk)
          row[#row + 1] = ok and "1" or "0"
        end
        rows[#rows + 1] = table.concat(row)
      end
      return rows
    end

    it("Llama-4-Scout: chunked RoPE layers and full-attention NoPE layers, from text_config", function()
      local res = assert(import_table(llama4(), "l4"))
      assert.same({ "l4_local", "l4_global" }, names_of(res))
      local cfgs, texts = load_all(res)
      for _, name in ipairs({ "l4_local", "l4_global" }) do
        assert.equal(40, cfgs[name].heads_q)
        assert.equal(8, cfgs[name].heads_kv)
        assert.equal(128, cfgs[name].head_dim)
        assert.is_true(cfgs[name].causal)
        assert.same({ left = -1, right = 0 }, cfgs[name].window)
      end
      assert.equal(8192, cfgs.l4_local.chunk)
      assert.is_nil(cfgs.l4_global.chunk)
      assert.truthy(texts.l4_local:find("Chunked-attention layers: 36 of 48 (0-2, 4-6, ", 1, true), texts.l4_local)
      assert.truthy(texts.l4_global:find("Full-attention layers: 12 of 48 (3, 7, ..., 47).", 1, true), texts.l4_global)
      assert.truthy(texts.l4_local:find("  chunk = 8192,\n", 1, true))
      assert.truthy(texts.l4_local:find("HF attention_chunk_size = 8192: transformers keeps key k for query q when "
        .. "k // 8192 == q // 8192", 1, true), texts.l4_local)
      assert.truthy(texts.l4_local:find("text_config = {...} (the keys below are read from it)", 1, true))
      -- the NoPE (full-attention) layers get the temperature, with transformers' defaults
      assert.same({ scale = 0.1, floor = 8192 }, cfgs.l4_global.temperature)
      assert.is_nil(cfgs.l4_local.temperature)
      assert.truthy(texts.l4_global:find("  temperature = { scale = 0.1, floor = 8192.0 }, -- attn_temperature_tuning",
        1, true), texts.l4_global)
      assert.truthy(texts.l4_global:find("attn_scale = absent (Llama 4 default: 0.1)", 1, true), texts.l4_global)
      assert.truthy(texts.l4_global:find("attn_temperature_tuning = 4", 1, true), texts.l4_global)
      -- the vision tower's heads (16) are not the language model's
      assert.is_nil(texts.l4_local:find("heads_q = 16", 1, true))
    end)

    it("use_qk_norm: qk_norm (weights of ones) on the RoPE layers' config only, off when false or not apart", function()
      local cfgs, texts = load_all(assert(import_table(llama4(), "q")))
      assert.same({ eps = 1e-5, offset = 0 }, cfgs.q_local.qk_norm)
      assert.is_nil(cfgs.q_global.qk_norm)
      assert.truthy(texts.q_local:find(
        "  qk_norm = { eps = 1e-05 }, -- use_qk_norm: eps from rms_norm_eps, weights of ones", 1, true), texts.q_local)
      assert.truthy(texts.q_local:find("rms_norm_eps = absent (Llama 4 default: 1e-05", 1, true), texts.q_local)
      cfgs = load_all(assert(import_table(llama4({ rms_norm_eps = 1e-6 }), "e")))
      assert.equal(1e-6, cfgs.e_local.qk_norm.eps)
      cfgs = load_all(assert(import_table(llama4({ use_qk_norm = false }), "off")))
      assert.is_nil(cfgs.off_local.qk_norm)
      local res = assert(import_table(llama4({ attention_chunk_size = json.null }), "z"))
      assert.is_nil(load_all(res).z.qk_norm)
      assert.truthy(res.configs[1].text:find("the norm of the RoPE layers is left out", 1, true))
      local err = select(2, import_table(llama4({ use_qk_norm = "yes" }), "e"))
      assert.truthy(err:find("'use_qk_norm' must be true or false", 1, true), err)
    end)

    it("attn_temperature_tuning: off when false or 0, attn_scale and floor_scale carried, left out without chunks",
      function()
      for _, off in ipairs({ false, 0 }) do
        local cfgs = load_all(assert(import_table(llama4({ attn_temperature_tuning = off }), "off")))
        assert.is_nil(cfgs.off_global.temperature)
      end
      local cfgs = load_all(assert(import_table(llama4({ attn_scale = 0.25, floor_scale = 1024 }), "t")))
      assert.same({ scale = 0.25, floor = 1024 }, cfgs.t_global.temperature)
      local res = assert(import_table(llama4({ attention_chunk_size = json.null }), "z"))
      assert.is_nil(load_all(res).z.temperature)
      assert.truthy(res.configs[1].text:find("the temperature of the NoPE layers is left out", 1, true))
      local err = select(2, import_table(llama4({ attn_temperature_tuning = "yes" }), "e"))
      assert.truthy(err:find("'attn_temperature_tuning' must be true, false or a number", 1, true), err)
      err = select(2, import_table(llama4({ attn_scale = -1 }), "e"))
      assert.truthy(err:find("'attn_scale' must be a number > 0", 1, true), err)
    end)

    it("gives the mask transformers uses for the same attention_chunk_size", function()
      local res = assert(import_table({ model_type = "llama4_text", num_attention_heads = 2, num_key_value_heads = 1,
        head_dim = 8, num_hidden_layers = 1, attention_chunk_size = 3, no_rope_layers = { 1 } }, "c3"))
      assert.same({ "c3" }, names_of(res))
      local cfgs = load_all(res)
      assert.equal(3, cfgs.c3.chunk)
      assert.same(HF_C3, chunk_mask(cfgs.c3, 7))
    end)

    it("no_rope_layers picks the chunked layers; absent attention_chunk_size is 8192; null: no chunks", function()
      local res = assert(import_table({ model_type = "llama4_text", num_attention_heads = 4, head_dim = 16,
        num_hidden_layers = 4, no_rope_layers = { 1, 0, 1, 1 } }, "n"))
      local cfgs, texts = load_all(res)
      assert.equal(8192, cfgs.n_local.chunk)
      assert.truthy(texts.n_local:find("Chunked-attention layers: 3 of 4 (0, 2, 3).", 1, true), texts.n_local)
      assert.truthy(texts.n_local:find("attention_chunk_size = absent (Llama 4 default: 8192)", 1, true))
      res = assert(import_table(llama4({ attention_chunk_size = json.null }), "z"))
      assert.same({ "z" }, names_of(res))
      assert.is_nil(load_all(res).z.chunk)
      -- no_rope_layer_interval moves the NoPE layers
      res = assert(import_table(llama4({ num_hidden_layers = 6, no_rope_layer_interval = 2 }), "i2"))
      assert.truthy(load_all(res) and res.configs[1].text:find("Chunked-attention layers: 3 of 6 (0, 2, 4).", 1,
        true), res.configs[1].text)
    end)

    it("layer_types with chunked_attention entries, in any family", function()
      local res = assert(import_table({ model_type = "llama", num_attention_heads = 8, hidden_size = 512,
        attention_chunk_size = 64, layer_types = { "chunked_attention", "full_attention", "chunked_attention" } },
        "lt"))
      local cfgs, texts = load_all(res)
      assert.same({ "lt_local", "lt_global" }, names_of(res))
      assert.equal(64, cfgs.lt_local.chunk)
      assert.is_nil(cfgs.lt_global.chunk)
      assert.truthy(texts.lt_local:find("2 chunked_attention, 1 full_attention", 1, true), texts.lt_local)
      res = assert(import_table({ model_type = "llama4_text", num_attention_heads = 8, head_dim = 64,
        num_hidden_layers = 2, layer_types = { "chunked_attention", "chunked_attention" } }, "all"))
      assert.same({ "all" }, names_of(res))
      assert.equal(8192, load_all(res).all.chunk)
    end)
  end)

  describe("families and keys", function()
    it("Mistral: sliding_window null is no window; absent is Mistral's default 4096", function()
      local cfgs = load_all(assert(import_table({ model_type = "mistral", num_attention_heads = 32,
        num_key_value_heads = 8, hidden_size = 4096, sliding_window = json.null }, "m")))
      assert.equal(-1, cfgs.m.window.left)
      local cfgs2, texts = load_all(assert(import_table({ model_type = "mistral", num_attention_heads = 32,
        hidden_size = 4096 }, "m2")))
      assert.equal(4095, cfgs2.m2.window.left)
      assert.equal(32, cfgs2.m2.heads_kv) -- num_key_value_heads missing: MHA
      assert.truthy(texts.m2:find("sliding_window = absent (Mistral default: 4096)", 1, true), texts.m2)
    end)

    it("head_dim is used when given, else hidden_size / heads", function()
      local cfgs = load_all(assert(import_table({ model_type = "llama", num_attention_heads = 32,
        hidden_size = 4096, head_dim = 64 }, "a")))
      assert.equal(64, cfgs.a.head_dim)
      cfgs = load_all(assert(import_table({ model_type = "llama", num_attention_heads = 20,
        hidden_size = 2560 }, "b")))
      assert.equal(128, cfgs.b.head_dim)
    end)

    it("layer_types decides which layers are sliding", function()
      local res = assert(import_table({ model_type = "gemma2", num_attention_heads = 8, num_key_value_heads = 4,
        head_dim = 64, hidden_size = 512, num_hidden_layers = 6, sliding_window = 16, query_pre_attn_scalar = 64,
        layer_types = { "full_attention", "full_attention", "sliding_attention", "sliding_attention",
          "sliding_attention", "full_attention" } }, "g"))
      local cfgs, texts = load_all(res)
      assert.same({ "g_local", "g_global" }, names_of(res))
      assert.equal(15, cfgs.g_local.window.left)
      assert.equal(-1, cfgs.g_global.window.left)
      assert.equal(50, cfgs.g_local.softcap) -- Gemma-2's default attn_logit_softcapping
      assert.truthy(texts.g_local:find("Sliding-window layers: 3 of 6 (2-4).", 1, true), texts.g_local)
      assert.truthy(texts.g_global:find("Full-attention layers: 3 of 6 (0, 1, 5).", 1, true), texts.g_global)

      -- all full: one config without a window
      res = assert(import_table({ model_type = "gemma2", num_attention_heads = 8, head_dim = 64,
        sliding_window = 16, layer_types = { "full_attention", "full_attention" } }, "h"))
      assert.same({ "h" }, names_of(res))
      assert.equal(-1, load_all(res).h.window.left)

      -- a family without a layer pattern of its own, all sliding
      res = assert(import_table({ model_type = "llama", num_attention_heads = 8, hidden_size = 512,
        sliding_window = 32, layer_types = { "sliding_attention", "sliding_attention" } }, "s"))
      assert.same({ "s" }, names_of(res))
      assert.equal(31, load_all(res).s.window.left)
    end)

    it("Gemma-2 without layer_types alternates, sliding on even layers; sliding_window null: none", function()
      local res = assert(import_table({ model_type = "gemma2", num_attention_heads = 8, num_key_value_heads = 4,
        head_dim = 256, num_hidden_layers = 26 }, "g"))
      assert.same({ "g_local", "g_global" }, names_of(res))
      local cfgs = load_all(res)
      assert.equal(4095, cfgs.g_local.window.left)
      assert.equal(1 / 16, cfgs.g_local.scale)
      res = assert(import_table({ model_type = "gemma2", num_attention_heads = 8, head_dim = 256,
        num_hidden_layers = 4, sliding_window = json.null }, "n"))
      assert.same({ "n" }, names_of(res))
    end)

    it("query_pre_attn_scalar sets the scale, also when it is not a square", function()
      local cfgs, texts = load_all(assert(import_table({ model_type = "gemma2", num_attention_heads = 32,
        num_key_value_heads = 16, head_dim = 128, query_pre_attn_scalar = 144, sliding_window = json.null }, "g27")))
      assert.equal(1 / 12, cfgs.g27.scale)
      assert.truthy(texts.g27:find("scale = 1 / 12,", 1, true))
      cfgs, texts = load_all(assert(import_table({ model_type = "gemma2", num_attention_heads = 8, head_dim = 64,
        query_pre_attn_scalar = 200, sliding_window = json.null }, "q")))
      assert.equal(1 / math.sqrt(200), cfgs.q.scale)
      assert.truthy(texts.q:find("scale = 1 / math.sqrt(200),", 1, true), texts.q)
    end)

    it("Qwen2 with use_sliding_window: layers from max_window_layers on are sliding", function()
      local base = { model_type = "qwen2", num_attention_heads = 28, num_key_value_heads = 4, hidden_size = 3584,
        num_hidden_layers = 4, use_sliding_window = true, sliding_window = 1024, max_window_layers = 2 }
      local res = assert(import_table(base, "q"))
      assert.same({ "q_local", "q_global" }, names_of(res))
      local cfgs, texts = load_all(res)
      assert.equal(1023, cfgs.q_local.window.left)
      assert.truthy(texts.q_local:find("Sliding-window layers: 2 of 4 (2, 3).", 1, true), texts.q_local)
      base.max_window_layers = 0
      res = assert(import_table(base, "all"))
      assert.same({ "all" }, names_of(res))
      assert.equal(1023, load_all(res).all.window.left)
      base.max_window_layers = 4
      res = assert(import_table(base, "none"))
      assert.equal(-1, load_all(res).none.window.left)
    end)

    it("Falcon: multi_query, new_decoder_architecture, num_kv_heads and the n_head alias", function()
      -- the older RefinedWebModel form of falcon-7b
      local cfgs = load_all(assert(import_table({ model_type = "RefinedWebModel", n_head = 71, hidden_size = 4544,
        multi_query = true }, "f7")))
      assert.equal(71, cfgs.f7.heads_q)
      assert.equal(1, cfgs.f7.heads_kv)
      assert.equal(64, cfgs.f7.head_dim)
      -- falcon-40b: new decoder architecture, 8 KV heads
      cfgs = load_all(assert(import_table({ model_type = "falcon", num_attention_heads = 128, hidden_size = 8192,
        new_decoder_architecture = true, num_kv_heads = 8 }, "f40")))
      assert.equal(8, cfgs.f40.heads_kv)
      -- multi_query absent: FalconConfig's default (true)
      cfgs = load_all(assert(import_table({ model_type = "falcon", num_attention_heads = 16, hidden_size = 1024 },
        "fd")))
      assert.equal(1, cfgs.fd.heads_kv)
      -- neither: one KV head per query head
      cfgs = load_all(assert(import_table({ model_type = "falcon", num_attention_heads = 16, hidden_size = 1024,
        multi_query = false }, "fm")))
      assert.equal(16, cfgs.fm.heads_kv)
    end)

    it("GPT-2: n_head / n_embd; scale_attn_weights = false is scale 1", function()
      local cfgs = load_all(assert(import_table({ model_type = "gpt2", n_head = 25, n_embd = 1600,
        scale_attn_weights = false }, "xl")))
      assert.equal(25, cfgs.xl.heads_q)
      assert.equal(64, cfgs.xl.head_dim)
      assert.equal(1, cfgs.xl.scale)
      assert.is_true(cfgs.xl.causal)
    end)

    it("encoders are bidirectional: BERT, RoBERTa padded; ViT fixed-length; is_decoder makes BERT causal", function()
      local cfgs = load_all(assert(import_table({ model_type = "roberta", num_attention_heads = 16,
        hidden_size = 1024 }, "r")))
      assert.is_false(cfgs.r.causal)
      assert.is_true(cfgs.r.padding)
      cfgs = load_all(assert(import_table({ model_type = "vit", num_attention_heads = 12, hidden_size = 768 },
        "v")))
      assert.is_false(cfgs.v.causal)
      assert.is_false(cfgs.v.padding)
      assert.same({ left = -1, right = -1 }, cfgs.v.window)
      cfgs = load_all(assert(import_table({ model_type = "bert", num_attention_heads = 12, hidden_size = 768,
        is_decoder = true }, "bd")))
      assert.is_true(cfgs.bd.causal)
      assert.is_false(cfgs.bd.padding)
    end)

    it("an unknown model_type is read with the common keys when architectures tell causal or not", function()
      local cfgs, texts = load_all(assert(import_table({ model_type = "starcoder9",
        architectures = { "Starcoder9ForCausalLM" }, num_attention_heads = 8, num_key_value_heads = 2,
        hidden_size = 1024 }, "u")))
      assert.is_true(cfgs.u.causal)
      assert.equal(2, cfgs.u.heads_kv)
      assert.truthy(texts.u:find('model_type "starcoder9" is not a family import-hf knows', 1, true))
      cfgs = load_all(assert(import_table({ model_type = "newbert", architectures = { "NewBertForMaskedLM" },
        num_attention_heads = 8, hidden_size = 512 }, "e")))
      assert.is_false(cfgs.e.causal)
    end)

    it("mT5 reads T5's keys: d_kv apart from d_model / num_heads, the buckets and max distance", function()
      local cfgs = load_all(assert(import_table({ model_type = "mt5", d_model = 512, d_kv = 64, num_heads = 6,
        relative_attention_num_buckets = 16, relative_attention_max_distance = 64 }, "m")))
      assert.equal(6, cfgs.m_encoder.heads_q)
      assert.equal(64, cfgs.m_encoder.head_dim)
      assert.equal(1, cfgs.m_decoder.scale)
      assert.same({ kind = "t5", buckets = 16, max_distance = 64, bidirectional = false }, cfgs.m_decoder.rel_bias)
      local res, err = import_table({ model_type = "t5", d_model = 512, num_heads = 8 }, "m")
      assert.is_nil(res)
      assert.truthy(err:find("no 'd_kv' in this T5 config", 1, true), err)
    end)

    it("BLOOM has ALiBi", function()
      local cfgs = load_all(assert(import_table({ model_type = "bloom", n_head = 32, hidden_size = 4096 }, "b")))
      assert.is_true(cfgs.b.alibi)
      assert.is_true(cfgs.b.causal)
    end)

    it("Whisper gives encoder, decoder and cross-attention configs", function()
      local res = assert(import_table({ model_type = "whisper", d_model = 768, encoder_attention_heads = 12,
        decoder_attention_heads = 12, architectures = { "WhisperForConditionalGeneration" } }, "ws"))
      assert.same({ "ws_encoder", "ws_decoder", "ws_cross" }, names_of(res))
      local cfgs = load_all(res)
      assert.is_false(cfgs.ws_encoder.causal)
      assert.is_false(cfgs.ws_encoder.padding)
      assert.is_true(cfgs.ws_decoder.causal)
      assert.same(semantics(preset("whisper_cross")), semantics(cfgs.ws_cross))
    end)

    it("--isa is written in the known order and validated", function()
      local cfgs, texts = load_all(assert(import_table({ model_type = "llama", num_attention_heads = 4,
        hidden_size = 256 }, "i", { "scalar", "avx2" })))
      assert.same({ "avx2", "scalar" }, cfgs.i.isa)
      assert.truthy(texts.i:find('isa = { "avx2", "scalar" },', 1, true), texts.i)
      local res, err = import_table({ model_type = "llama", num_attention_heads = 4, hidden_size = 256 }, "i",
        { "avx3" })
      assert.is_nil(res)
      assert.truthy(err:find("--isa: unknown ISA 'avx3'", 1, true), err)
    end)
  end)

  describe("the written text", function()
    it("is exactly this for Mistral-7B", function()
      local text = assert(helper.read_file(HF_DIR .. "/mistral_7b.json"))
      local res = assert(hf.import(assert(hf_json.decode(text, "x")), { file = "tests/hf/mistral_7b.json", text = text,
        name = "mistral_7b", command = "attngen import-hf tests/hf/mistral_7b.json" }))
      assert.equal(table.concat({
        "-- mistral_7b: Mistral attention: 32 query heads, 8 KV heads (GQA), head dim 128, causal, sliding window "
          .. "of 4096 keys.",
        '-- Imported from "tests/hf/mistral_7b.json" (model_type "mistral", architectures ["MistralForCausalLM"]) by',
        "--   attngen import-hf tests/hf/mistral_7b.json",
        "-- Source values used:",
        "--   num_attention_heads = 32",
        "--   num_key_value_heads = 8",
        "--   hidden_size = 4096",
        "--   sliding_window = 4096",
        "--   rope_theta = 10000",
        "return {",
        '  name = "mistral_7b",',
        "  heads_q = 32, -- num_attention_heads",
        "  heads_kv = 8, -- num_key_value_heads",
        "  head_dim = 128, -- hidden_size / num_attention_heads = 4096 / 32",
        "  causal = true, -- Mistral is a causal decoder",
        "  -- HF sliding_window = 4096: transformers keeps key k for query q when q - k < 4096, the last 4096 keys",
        "  -- including the current one (FlashAttention: window_size = (4095, 0)). attngen's sliding_window counts",
        "  -- the same keys (window.left = 4095), so the value is unchanged.",
        "  sliding_window = 4096,",
        '  rope = { style = "neox", theta = 10000.0 }, -- Q rotated in the kernel; cached K stored rotated',
        "}",
        "",
      }, "\n"), res.configs[1].text)
    end)

    it("keeps strings from the JSON inside comments", function()
      local res = assert(import_table({ model_type = 'x"\nreturn {} --', architectures = { "X\nForCausalLM" },
        num_attention_heads = 2, hidden_size = 8 }, "inj"))
      local text = res.configs[1].text
      local header = text:match("^(.-)\nreturn {\n")
      assert.is_string(header, text)
      for _, line in ipairs(helper.lines(header)) do
        assert.equal("--", line:sub(1, 2), line)
      end
      assert.equal(1, select(2, text:gsub("\nreturn {", "")))
      load_all(res)
    end)

    it("layer lists are short", function()
      assert.equal("0, 2, ..., 40", hf.layer_list({ 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34,
        36, 38, 40 }))
      assert.equal("28-31", hf.layer_list({ 28, 29, 30, 31 }))
      assert.equal("0, 1, 5, 7-9", hf.layer_list({ 0, 1, 5, 7, 8, 9 }))
      assert.equal("3", hf.layer_list({ 3 }))
    end)

    it("names come from files and folders as C identifiers", function()
      assert.equal("meta_llama_3_8b", hf.identifier("Meta-Llama-3-8B"))
      assert.equal("m_7b_model", hf.identifier("7B model"))
      assert.is_nil(hf.identifier("--"))
    end)
  end)

  describe("errors", function()
    local function err_of(t)
      local res, err
      if type(t) == "string" then res, err = import_text(t) else res, err = import_table(t) end
      assert.is_nil(res)
      assert.is_string(err)
      assert.equal(1, #helper.lines(err), err)
      return err
    end

    it("invalid JSON names the line", function()
      local err = err_of('{\n  "model_type": "llama",\n  "num_attention_heads": ,\n  "hidden_size": 8\n}\n')
      assert.truthy(err:find("^t%.json:3: invalid JSON"), err)
      err = err_of('{"model_type": "llama"}\n}')
      assert.truthy(err:find("^t%.json:2: invalid JSON: unexpected text"), err)
      -- dkjson alone would read these
      err = err_of('{\n  "model_type": "llama",\n  "num_attention_heads": 32\n  "hidden_size": 8\n}\n')
      assert.truthy(err:find("^t%.json:4: invalid JSON: ',' or '}' expected %(column 3%)"), err)
      err = err_of('{\n  "model_type": "llama",\n  "num_attention_heads" 32,\n  "hidden_size": 8\n}\n')
      assert.truthy(err:find("^t%.json:3: invalid JSON: ':' expected"), err)
      err = err_of('{"model_type": "llama", "num_attention_heads": 32, "hidden_size": 40 96}')
      assert.truthy(err:find("^t%.json:1: invalid JSON: ',' or '}' expected %(column 70%)"), err)
      err = err_of('{"a": [1,],}')
      assert.truthy(err:find("^t%.json:1: invalid JSON"), err)
      err = err_of("[1, 2]")
      assert.truthy(err:find("holds a JSON object", 1, true), err)
      err = err_of("")
      assert.truthy(err:find("invalid JSON", 1, true), err)
    end)

    it("missing heads, unknown families, indivisible dims, bad values", function()
      assert.truthy(err_of({ model_type = "llama", hidden_size = 4096 }):find("no 'num_attention_heads'", 1, true))
      assert.truthy(err_of({ model_type = "mamba", hidden_size = 768 }):find(
        'model_type "mamba" is not a family import-hf knows', 1, true))
      assert.truthy(err_of({ hidden_size = 768 }):find("(no 'model_type')", 1, true))
      assert.truthy(err_of({ model_type = "foo", num_attention_heads = 4, hidden_size = 64 }):find(
        "do not say whether it is causal", 1, true))
      assert.truthy(err_of('{\n"model_type": "llama",\n"num_attention_heads": 30,\n"hidden_size": 4096\n}'):find(
        "^t%.json:4: 'hidden_size' %(4096%) is not divisible by 'num_attention_heads' %(30%)"))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 32 }):find("no 'head_dim'", 1, true))
      assert.truthy(err_of('{\n"model_type": "llama",\n"num_attention_heads": 32,\n"num_key_value_heads": 5,\n'
        .. '"hidden_size": 4096\n}'):find("^t%.json:4: .*'heads_kv' %(5%) must divide 'heads_q' %(32%)"))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 4, head_dim = 1024 }):find(
        "'head_dim' must be in 1..512", 1, true))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 2.5, hidden_size = 10 }):find(
        "'num_attention_heads' must be an integer >= 1, got 2.5", 1, true))
      assert.truthy(err_of({ model_type = "mistral", num_attention_heads = 4, hidden_size = 64,
        sliding_window = 0 }):find("'sliding_window' must be an integer >= 1", 1, true))
      assert.truthy(err_of({ model_type = "gemma2", num_attention_heads = 4, head_dim = 64,
        layer_types = { "full_attention", "chunked_attention" } }):find('entry 1 is "chunked_attention"', 1, true))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 4, hidden_size = 64,
        layer_types = { "sliding_attention" } }):find("'sliding_window' is null or absent", 1, true))
      assert.truthy(err_of({ model_type = "gemma2", num_attention_heads = 4, head_dim = 64, num_hidden_layers = 3,
        layer_types = { "full_attention", "sliding_attention" } }):find(
        "'layer_types' has 2 entries but 'num_hidden_layers' is 3", 1, true))
      assert.truthy(err_of({ model_type = "qwen2", num_attention_heads = 4, hidden_size = 64, sliding_window = 8,
        layer_types = { "full_attention", "sliding_attention" } }):find("'use_sliding_window' is not true", 1, true))
      assert.truthy(err_of({ model_type = "gemma2", num_attention_heads = 4, head_dim = 64,
        attn_logit_softcapping = -1 }):find("'attn_logit_softcapping' must be a number > 0", 1, true))
    end)

    it("chunked attention: bad values, missing keys, two kinds of local layers", function()
      local function l4(tc) -- Llama4ForConditionalGeneration with text_config tc
        return { model_type = "llama4", architectures = { "Llama4ForConditionalGeneration" }, text_config = tc }
      end
      local base = { num_attention_heads = 4, head_dim = 16, num_hidden_layers = 4 }
      local function with_(t)
        local c = {}
        for k, v in pairs(base) do c[k] = v end
        for k, v in pairs(t) do c[k] = v end
        return c
      end
      assert.truthy(err_of({ model_type = "llama4", num_attention_heads = 4 }):find(
        "Llama 4 keeps its language model's keys in 'text_config', an object; got nothing", 1, true))
      assert.truthy(err_of(l4({ 1, 2 })):find("'text_config', an object", 1, true))
      assert.truthy(err_of(l4(with_({ attention_chunk_size = 0 }))):find(
        "'attention_chunk_size' must be an integer >= 1, got 0", 1, true))
      assert.truthy(err_of(l4(with_({ attention_chunk_size = 2.5 }))):find("'attention_chunk_size' must be", 1, true))
      assert.truthy(err_of(l4(with_({ attention_chunk_size = 2 ^ 30 + 1 }))):find(
        "'chunk' must be in 1..1073741824, got 1073741825 (from 'attention_chunk_size')", 1, true))
      assert.truthy(err_of(l4(with_({ no_rope_layers = { 1, 0 } }))):find(
        "'no_rope_layers' has 2 entries but 'num_hidden_layers' is 4", 1, true))
      assert.truthy(err_of(l4(with_({ no_rope_layers = { 1, 0, 2, 1 } }))):find(
        "'no_rope_layers' entry 2 is 2", 1, true))
      assert.truthy(err_of(l4(with_({ no_rope_layers = "all" }))):find("'no_rope_layers' must be a list", 1, true))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 4, hidden_size = 64,
        layer_types = { "full_attention", "chunked_attention" } }):find(
        "'layer_types' entry 1 is \"chunked_attention\" but 'attention_chunk_size' is null or absent", 1, true))
      assert.truthy(err_of({ model_type = "llama", num_attention_heads = 4, hidden_size = 64, sliding_window = 8,
        attention_chunk_size = 8, layer_types = { "sliding_attention", "chunked_attention" } }):find(
        "both sliding_attention and chunked_attention layers", 1, true))
      assert.truthy(err_of({ model_type = "bert", num_attention_heads = 4, hidden_size = 64, attention_chunk_size = 8,
        layer_types = { "chunked_attention" } }):find("a bidirectional model with chunked-attention layers", 1, true))
    end)

    it("keys that change attention and that a family does not read are refused, naming the key", function()
      local base = { model_type = "llama", num_attention_heads = 8, hidden_size = 512 }
      local function with(extra)
        local t = {}
        for k, v in pairs(base) do t[k] = v end
        for k, v in pairs(extra) do t[k] = v end
        return t
      end
      assert.truthy(err_of(with({ kv_lora_rank = 512 })):find("'kv_lora_rank' = 512 changes attention", 1, true))
      assert.truthy(err_of(with({ qk_rope_head_dim = 64 })):find("'qk_rope_head_dim'", 1, true))
      assert.truthy(err_of(with({ no_rope_layers = { 1, 0 } })):find("'no_rope_layers'", 1, true))
      assert.truthy(err_of(with({ attn_temperature_tuning = true })):find("'attn_temperature_tuning'", 1, true))
      assert.truthy(err_of(with({ rope_scaling = { rope_type = "mrope", factor = 2 } }))
        :find("'rope_scaling' has type \"mrope\"", 1, true))
      assert.truthy(err_of(with({ rope_scaling = { type = "su" } })):find("--common-keys", 1, true))
      -- values that change nothing pass; the rope types whose rotation stays outside the kernel pass
      assert.is_table(import_table(with({ attn_temperature_tuning = false, no_rope_layers = {},
        kv_lora_rank = json.null })))
      assert.is_table(import_table(with({ rope_scaling = { rope_type = "llama3", factor = 8, low_freq_factor = 1,
        high_freq_factor = 4, original_max_position_embeddings = 8192 } })))
      -- --common-keys reads the old way and says what it left out
      local res = assert(import_table(with({ kv_lora_rank = 512, rope_scaling = { rope_type = "mrope" } }), "t", nil,
        true))
      local _, texts = load_all(res)
      assert.truthy(texts.t:find("-- --common-keys: read with the common keys only; left out: kv_lora_rank, "
        .. "rope_scaling.", 1, true), texts.t)
      assert.equal(64, res.configs[1].cfg.head_dim)
    end)

    it("MLA: Gemma-3 defaults, DeepSeek without rope_scaling, and bad MLA values", function()
      local res = assert(import_table({ model_type = "gemma3", text_config = { model_type = "gemma3_text",
        hidden_size = 2560, num_hidden_layers = 34, sliding_window = 1024 } }, "g"))
      local cfgs = load_all(res)
      assert.equal(8, cfgs.g_local.heads_q)
      assert.equal(4, cfgs.g_local.heads_kv)
      assert.equal(256, cfgs.g_local.head_dim)
      assert.equal(1 / 16, cfgs.g_local.scale)
      assert.truthy(res.configs[2].text:find("Full-attention layers: 5 of 34 (5, 11, ..., 29).", 1, true))
      res = assert(import_table({ model_type = "deepseek_v2", num_attention_heads = 16, kv_lora_rank = 512,
        qk_rope_head_dim = 64, qk_nope_head_dim = 128, v_head_dim = 128, q_lora_rank = json.null }, "v2"))
      cfgs = load_all(res)
      assert.equal(1 / math.sqrt(192), cfgs.v2_decode.scale)
      assert.equal(16, cfgs.v2_prefill.heads_kv)
      assert.truthy(err_of({ model_type = "deepseek_v3", num_attention_heads = 16, kv_lora_rank = 0 })
        :find("'kv_lora_rank' must be an integer >= 1", 1, true))
      assert.truthy(err_of({ model_type = "deepseek_v3", num_attention_heads = 16, kv_lora_rank = 1024 })
        :find("head_dim", 1, true))
      assert.truthy(err_of({ model_type = "kimi_k2", num_attention_heads = 16,
        rope_scaling = { type = "yarn", mscale_all_dim = 1 } }):find("'rope_scaling.factor' must be a number", 1, true))
    end)

    it("what attngen cannot express is refused", function()
      assert.truthy(err_of({ model_type = "falcon", num_attention_heads = 32, hidden_size = 2048, alibi = true })
        :find("Falcon with 'alibi' = true", 1, true))
      assert.truthy(err_of({ model_type = "gpt2", n_head = 12, n_embd = 768, scale_attn_by_inverse_layer_idx = true })
        :find("scale_attn_by_inverse_layer_idx", 1, true))
      assert.truthy(err_of({ model_type = "gemma2", num_attention_heads = 4, head_dim = 64,
        use_bidirectional_attention = true }):find("a bidirectional model with sliding-window layers", 1, true))
      assert.truthy(err_of({ model_type = "mpt", architectures = { "MPTForCausalLM" }, n_heads = 32, d_model = 4096,
        attn_config = { alibi = true } }):find("ALiBi", 1, true))
    end)
  end)

  describe("storage types (--dtype)", function()
    it("auto writes the model's torch_dtype as dtype; without --dtype there is no dtype line (f32)", function()
      local d = folder()
      local code, _, err = helper.attngen({ "import-hf", "tests/hf/llama3_8b.json", "--dtype", "auto", "-o", d, "-q" })
      assert.equal(0, code, err)
      local text = assert(helper.read_file(d .. "/llama3_8b.lua"))
      assert.truthy(text:find('dtype = "bf16", -- torch_dtype "bfloat16"', 1, true), text)
      assert.equal("bf16", assert(presets.load(d .. "/llama3_8b.lua")).dtype)
      code = helper.attngen({ "import-hf", "tests/hf/gemma2_9b.json", "--dtype", "auto", "-o", d, "-q" })
      assert.equal(0, code)
      assert.equal("f32", assert(presets.load(d .. "/gemma2_9b_local.lua")).dtype)
      local plain = folder()
      assert.equal(0, (helper.attngen({ "import-hf", "tests/hf/llama3_8b.json", "-o", plain, "-q" })))
      assert.is_nil(assert(helper.read_file(plain .. "/llama3_8b.lua")):find("dtype", 1, true))
    end)

    it("a type name is written as it is", function()
      local d = folder()
      assert.equal(0, (helper.attngen({ "import-hf", "tests/hf/gpt2.json", "--dtype", "f16", "-o", d, "-q" })))
      assert.equal("f16", assert(presets.load(d .. "/gpt2.lua")).dtype)
    end)

    it("refuses what it cannot store, in one line", function()
      local d = folder()
      fails({ "import-hf", "tests/hf/gpt2.json", "--dtype", "f8", "-o", d }, nil, "--dtype", "f8", "auto")
      local j = assert(helper.read_file(HF_DIR .. "/llama3_8b.json"))
      helper.write_file(d .. "/int8.json", (j:gsub('"torch_dtype": "bfloat16"', '"torch_dtype": "int8"')))
      fails({ "import-hf", d .. "/int8.json", "--dtype", "auto", "-o", d }, nil, "torch_dtype", "int8")
      helper.write_file(d .. "/none.json", (j:gsub('"torch_dtype": "bfloat16",', '')))
      fails({ "import-hf", d .. "/none.json", "--dtype", "auto", "-o", d }, nil, "torch_dtype", "--dtype f32")
      assert.is_nil(helper.read_file(d .. "/int8.lua"))
    end)
  end)

  describe("the command", function()
    it("writes <name>.lua into the current folder by default, then says unchanged", function()
      local d = folder()
      helper.write_file(d .. "/config.json", assert(helper.read_file(HF_DIR .. "/llama3_8b.json")))
      local code, out, err = helper.attngen({ "import-hf", "config.json", "--name", "llama3_8b" }, { cwd = d })
      assert.equal(0, code, err)
      assert.equal("wrote ./llama3_8b.lua\n", out)
      local cfg = assert(presets.load(d .. "/llama3_8b.lua"))
      assert.same(semantics(preset("llama3_8b")), semantics(cfg))
      code, out = helper.attngen({ "import-hf", "config.json", "--name", "llama3_8b" }, { cwd = d })
      assert.equal(0, code)
      assert.equal("unchanged ./llama3_8b.lua\n", out)
      assert.same({ "config.json", "llama3_8b.lua" }, helper.ls(d))
    end)

    it("names the config after the folder of a config.json, or after the JSON file", function()
      local d = folder()
      assert(require("pl.dir").makepath(d .. "/Meta-Llama-3-8B"))
      helper.write_file(d .. "/Meta-Llama-3-8B/config.json", assert(helper.read_file(HF_DIR .. "/llama3_8b.json")))
      local out = d .. "/out"
      local code, stdout, err = helper.attngen({ "import-hf", d .. "/Meta-Llama-3-8B/config.json", "-o", out })
      assert.equal(0, code, err)
      assert.equal("wrote " .. out .. "/meta_llama_3_8b.lua\n", stdout)
      code, stdout = helper.attngen({ "import-hf", "tests/hf/gemma2_9b.json", "-o", out, "-q" })
      assert.equal(0, code)
      assert.equal("", stdout)
      assert.same({ "gemma2_9b_global.lua", "gemma2_9b_local.lua", "meta_llama_3_8b.lua" }, helper.ls(out))
    end)

    it("-o FILE writes one config, named after the file", function()
      local d = folder()
      local code, out, err = helper.attngen({ "import-hf", "tests/hf/gpt2.json", "-o", d .. "/sub/my_gpt.lua" })
      assert.equal(0, code, err)
      assert.equal("wrote " .. d .. "/sub/my_gpt.lua\n", out)
      assert.equal("my_gpt", assert(presets.load(d .. "/sub/my_gpt.lua")).name)
      fails({ "import-hf", "tests/hf/gemma2_9b.json", "-o", d .. "/g.lua" }, nil, "gives 2 configs",
        "(g_local, g_global)", "give -o a folder")
      assert.same({ "sub" }, helper.ls(d))
    end)

    it("refuses to replace a different file unless --force", function()
      local d = folder()
      helper.write_file(d .. "/gpt2.lua", "-- mine\nreturn { name = \"gpt2\", heads_q = 1, head_dim = 8 }\n")
      fails({ "import-hf", "tests/hf/gpt2.json", "-o", d }, nil, d .. "/gpt2.lua: exists with other content",
        "--force")
      assert.equal("-- mine", helper.read_file(d .. "/gpt2.lua"):sub(1, 7))
      -- two configs, one of them in the way: neither is written
      helper.write_file(d .. "/gemma2_9b_global.lua", "-- mine\n")
      fails({ "import-hf", "tests/hf/gemma2_9b.json", "-o", d }, nil, "gemma2_9b_global.lua: exists")
      assert.same({ "gemma2_9b_global.lua", "gpt2.lua" }, helper.ls(d))
      local code, out, err = helper.attngen({ "import-hf", "tests/hf/gpt2.json", "-o", d, "--force" })
      assert.equal(0, code, err)
      assert.equal("wrote " .. d .. "/gpt2.lua\n", out)
      assert.same(semantics(preset("gpt2")), semantics(assert(presets.load(d .. "/gpt2.lua"))))
    end)

    it("is deterministic", function()
      local a, b = folder(), folder()
      assert.equal(0, (helper.attngen({ "import-hf", "tests/hf/gemma2_9b.json", "-o", a, "--isa", "avx2,scalar" })))
      assert.equal(0, (helper.attngen({ "import-hf", "tests/hf/gemma2_9b.json", "-o", b, "--isa", "avx2,scalar" })))
      for _, f in ipairs({ "gemma2_9b_local.lua", "gemma2_9b_global.lua" }) do
        assert.equal(helper.read_file(a .. "/" .. f), helper.read_file(b .. "/" .. f))
      end
      assert.truthy(helper.read_file(a .. "/gemma2_9b_local.lua"):find(
        "--   attngen import-hf tests/hf/gemma2_9b.json --isa avx2,scalar\n", 1, true))
    end)

    it("user errors are one line, exit code 2, nothing written", function()
      local d = folder()
      helper.write_file(d .. "/bad.json", '{\n  "model_type": "llama",\n  "num_attention_heads": 32,\n'
        .. '  "hidden_size": 40 96\n}\n')
      helper.write_file(d .. "/noheads.json", '{"model_type": "llama", "hidden_size": 4096}')
      helper.write_file(d .. "/mamba.json", '{"model_type": "mamba", "hidden_size": 768}')
      local out = d .. "/out"
      local opts = { cwd = d }
      fails({ "import-hf", "missing.json", "-o", out }, opts, "missing.json: cannot read: No such file")
      fails({ "import-hf", "bad.json", "-o", out }, opts, "bad.json:4: invalid JSON")
      fails({ "import-hf", "noheads.json", "-o", out }, opts, "noheads.json: no 'num_attention_heads'")
      fails({ "import-hf", "mamba.json", "-o", out }, opts, 'model_type "mamba" is not a family')
      fails({ "import-hf", d, "-o", out }, opts, "is a folder")
      fails({ "import-hf", HF_DIR .. "/gpt2.json", "-o", out, "--name", "9lives" }, opts, "--name 9lives")
      fails({ "import-hf", HF_DIR .. "/gpt2.json", "-o", out, "--isa", "sse" }, opts, "--isa: unknown ISA 'sse'")
      fails({ "import-hf" }, opts)
      assert.same({ "bad.json", "mamba.json", "noheads.json" }, helper.ls(d))
    end)
  end)

  describe("end to end", function()
    it("an imported config generates C with attngen generate", function()
      local d = folder()
      local code, _, err = helper.attngen({ "import-hf", "tests/hf/mistral_7b.json", "-o", d })
      assert.equal(0, code, err)
      local out = d .. "/gen"
      local stdout
      code, stdout, err = helper.attngen({ "generate", d .. "/mistral_7b.lua", "-o", out })
      assert.equal(0, code, err)
      assert.truthy(stdout:find("wrote " .. out .. "/mistral_7b.c", 1, true), stdout)
      local c = assert(helper.read_file(out .. "/mistral_7b.c"))
      local h = assert(helper.read_file(out .. "/mistral_7b.h"))
      assert.truthy(h:find("attn_mistral_7b_fwd", 1, true))
      -- the kernel is the preset's: the same text after the banner (which names the config file)
      local pcfg = preset("mistral_7b")
      local files = require("kernel_files").render(pcfg, "mistral_7b")
      local want
      for _, f in ipairs(files) do
        if f.name == "mistral_7b.c" then want = f.text end
      end
      local function body(s) return (s:gsub("^/%*.-\n %*/\n", "", 1)) end
      assert.is_string(want)
      assert.is_true(#body(want) > 1000 and #body(want) < #want)
      assert.equal(body(want), body(c))
    end)
  end)

  it("util.serialize of the loaded config has no stray keys (schema round trip)", function()
    local res = assert(import_table({ model_type = "llama", num_attention_heads = 4, hidden_size = 64 }, "rt"))
    local cfg = assert(config.from_table(res.configs[1].raw))
    assert.equal(util.serialize(res.configs[1].cfg), util.serialize(cfg))
  end)
end)
