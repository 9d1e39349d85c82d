-- bin/attngen as a subprocess: help, presets, generate, run (end to end
-- against the float64 reference) and the one-line errors of docs/cli.md.  Compiles C, so tagged #slow.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local presets = require("presets")
local config = require("config")

local EXIT_USAGE = 2

describe("cli #slow", function()
  local tmp, env, npy_tool

  setup(function()
    tmp = helper.tmpdir()
    -- the test run's cache or a private one: builds from other runs neither help nor interfere
    env = helper.build_env(tmp)
    npy_tool = tmp .. "/npy_tool"
    local cc = os.getenv("CC") or "cc"
    local code, _, err = helper.sh(("%s -std=c99 -O2 -Iruntime tests/npy_tool.c runtime/attn_npy.c -o %s -lm")
      :format(helper.quote(cc), helper.quote(npy_tool)))
    assert(code == 0, "cannot build tests/npy_tool.c: " .. err)
  end)

  teardown(function() helper.rmtree(tmp) end)

  local function attngen(args) return helper.attngen(args, { env = env }) end

  --- A fresh folder under tmp.
  local nfolders = 0
  local function folder(name)
    nfolders = nfolders + 1
    local d = ("%s/%s%d"):format(tmp, name or "d", nfolders)
    assert(require("pl.dir").makepath(d))
    return d
  end

  --- Runs attngen expecting a usage error: exit 2, exactly one line on
  -- stderr starting with "attngen: ", containing each given substring.
  local function fails(args, ...)
    local code, out, err = attngen(args)
    local cmd = table.concat(args, " ")
    assert.equal(EXIT_USAGE, code, ("exit code of attngen %s (stderr: %s)"):format(cmd, err))
    assert.equal("attngen: ", err:sub(1, 9), "stderr: " .. err)
    assert.equal(1, #helper.lines(err), "not exactly one line: " .. err)
    assert.equal("\n", err:sub(-1), "no newline at the end: " .. err)
    for _, s in ipairs({ ... }) do
      assert.truthy(err:find(s, 1, true), ("expected '%s' in: %s"):format(s, err))
    end
    return err, out
  end

  --- Runs tests/npy_tool with the given arguments (a list, or several).
  local function npy(...)
    local args = { ... }
    if type(args[1]) == "table" then args = args[1] end
    local parts = { helper.quote(npy_tool) }
    for _, a in ipairs(args) do parts[#parts + 1] = helper.quote(a) end
    local code, out, err = helper.sh(table.concat(parts, " "))
    return code, out, err
  end

  describe("help and version", function()
    it("--help exits 0 and lists the commands", function()
      local code, out = attngen({ "--help" })
      assert.equal(0, code)
      assert.truthy(out:find("Usage: attngen", 1, true), out)
      for _, c in ipairs({ "generate", "run", "check", "bench", "presets" }) do
        assert.truthy(out:find("\n   " .. c .. " ", 1, true), c)
      end
    end)

    it("every command has --help", function()
      for _, c in ipairs({ "generate", "run", "check", "bench", "presets" }) do
        local code, out = attngen({ c, "--help" })
        assert.equal(0, code, c)
        assert.truthy(out:find("Usage: attngen " .. c, 1, true), out)
      end
      local _, out = attngen({ "run", "--help" })
      assert.truthy(out:find("--reference", 1, true), out)
    end)

    it("--version exits 0 with the version", function()
      local code, out = attngen({ "--version" })
      assert.equal(0, code)
      assert.equal("attngen " .. require("version").string .. "\n", out)
    end)

    it("no command, or an unknown one, is a usage error", function()
      fails({})
      fails({ "genrate" })
      fails({ "generate" })
      fails({ "generate", "gpt2", "--bogus" })
      fails({ "generate", "gpt2", "--ouptut", "x" }, "Did you mean")
    end)
  end)

  describe("presets", function()
    it("lists every configs/*.lua, sorted, with its description", function()
      local code, out = attngen({ "presets" })
      assert.equal(0, code)
      local listed = {}
      for _, line in ipairs(helper.lines(out)) do
        local name, desc = line:match("^(%S+)%s+(.*)$")
        assert.is_not_nil(name, line)
        assert.is_true(#desc > 0, "no description for " .. name)
        listed[#listed + 1] = name
      end
      local files = {}
      for _, f in ipairs(require("pl.dir").getfiles(helper.root .. "/configs", "*.lua")) do
        files[#files + 1] = f:match("([^/]+)%.lua$")
      end
      table.sort(files)
      assert.same(files, listed)
      assert.is_true(#listed >= 5)
    end)

    it("each preset's name equals its file name", function()
      for _, name in ipairs(presets.list()) do
        local cfg, err = config.load(helper.root .. "/configs/" .. name .. ".lua")
        assert.is_table(cfg, err)
        assert.equal(name, cfg.name)
      end
    end)
  end)

  describe("generate", function()
    it("writes <name>.h and <name>.c into -o DIR, then says unchanged", function()
      local out = tmp .. "/gen/nested/dir" -- created as needed
      local code, stdout, stderr = attngen({ "generate", "gpt2", "configs/test/t_d1.lua", "-o", out })
      assert.equal(0, code, stderr)
      assert.same({ "gpt2.c", "gpt2.h", "t_d1.c", "t_d1.h" }, helper.ls(out))
      for _, f in ipairs({ "gpt2.h", "gpt2.c", "t_d1.h", "t_d1.c" }) do
        assert.truthy(stdout:find("wrote " .. out .. "/" .. f, 1, true), stdout)
      end
      local before = helper.read_file(out .. "/gpt2.c")
      code, stdout = attngen({ "generate", "gpt2", "configs/test/t_d1.lua", "-o", out })
      assert.equal(0, code)
      for _, f in ipairs({ "gpt2.h", "gpt2.c", "t_d1.h", "t_d1.c" }) do
        assert.truthy(stdout:find("unchanged " .. out .. "/" .. f, 1, true), stdout)
      end
      assert.is_nil(stdout:find("wrote", 1, true))
      assert.equal(before, helper.read_file(out .. "/gpt2.c"))
      assert.same({ "gpt2.c", "gpt2.h", "t_d1.c", "t_d1.h" }, helper.ls(out))
    end)

    it("-q prints nothing; --set changes the output and appears in the banner", function()
      local out = folder("gen")
      local code, stdout = attngen({ "generate", "-q", "gpt2", "--set", "causal=false", "-o", out })
      assert.equal(0, code)
      assert.equal("", stdout)
      local h = helper.read_file(out .. "/gpt2.h")
      assert.truthy(h:find(" *   attngen generate gpt2 --set causal=false\n", 1, true), h:sub(1, 300))
      assert.truthy(h:find(" *   causal = false,", 1, true))
    end)

    describe("errors: one line, exit 2, nothing written", function()
      local dir
      before_each(function() dir = tmp .. "/not_created_" .. tostring(nfolders + 1) nfolders = nfolders + 1 end)
      after_each(function()
        assert.is_false(helper.exists(dir), "the output folder was created: " .. dir)
      end)

      it("unknown preset, with did you mean", function()
        fails({ "generate", "gtp2", "-o", dir }, "unknown preset 'gtp2'", "did you mean 'gpt2'?")
        fails({ "generate", "zzzzzzzz", "-o", dir }, "unknown preset 'zzzzzzzz'", "presets: ")
      end)

      it("missing config file", function()
        fails({ "generate", "no/such/config.lua", "-o", dir }, "no/such/config.lua", "no such config file")
        fails({ "generate", "missing.lua", "-o", dir }, "missing.lua")
      end)

      it("config with an unknown key", function()
        local p = helper.config_file(folder("cfg"), "bad",
          'return {\n  name = "bad",\n  heads_q = 4,\n  head_dim = 8,\n  casual = true,\n}\n')
        fails({ "generate", p, "-o", dir }, p .. ":5: unknown key 'casual'", "did you mean 'causal'?")
      end)

      it("heads_q not divisible by heads_kv", function()
        local p = helper.config_file(folder("cfg"), "gqa",
          'return {\n  name = "gqa",\n  heads_q = 6,\n  heads_kv = 4,\n  head_dim = 8,\n}\n')
        fails({ "generate", p, "-o", dir }, p .. ":4:", "'heads_kv' (4) must divide 'heads_q' (6)")
        fails({ "generate", "llama3_8b", "--set", "heads_kv=5", "-o", dir }, "--set heads_kv=5", "must divide")
      end)

      it("bad --set", function()
        fails({ "generate", "gpt2", "--set", "heads_q=8x", "-o", dir }, "--set heads_q=8x")
        fails({ "generate", "gpt2", "--set", "causal", "-o", dir }, "--set causal", "key=value")
        fails({ "generate", "gpt2", "--set", "head_dmi=3", "-o", dir }, "unknown key 'head_dmi'",
          "did you mean 'head_dim'?")
        fails({ "generate", "gpt2", "--set", "window={left=3", "-o", dir }, "--set window={left=3")
        fails({ "generate", "gpt2", "--set", "heads_q=os.exit(0)", "-o", dir }, "--set heads_q=os.exit(0)")
      end)

      it("two configs with the same name", function()
        fails({ "generate", "gpt2", "configs/gpt2.lua", "-o", dir }, "'gpt2' is used twice")
        local p = helper.config_file(folder("cfg"), "other", 'return { name = "t_d1", heads_q = 1, head_dim = 4 }\n')
        fails({ "generate", "configs/test/t_d1.lua", p, "-o", dir }, "'t_d1' is used twice")
      end)

      it("a bad config after good ones writes nothing", function()
        local p = helper.config_file(folder("cfg"), "late", 'return { name = "late", heads_q = 0, head_dim = 4 }\n')
        fails({ "generate", "gpt2", "vit_b16", p, "-o", dir }, p .. ":1:", "heads_q")
      end)
    end)

    it("an output folder that cannot be made: one line, exit 2, nothing written", function()
      local d = folder("gen")
      helper.write_file(d .. "/file", "a regular file\n")
      fails({ "generate", "gpt2", "-o", d .. "/file/sub" }, d .. "/file/sub")
      fails({ "generate", "gpt2", "-o", d .. "/file" }, d .. "/file")
      assert.same({ "file" }, helper.ls(d))
      assert.equal("a regular file\n", helper.read_file(d .. "/file"))
    end)
  end)

  describe("run", function()
    -- which variants this CPU runs (the runtime's rules: AVX2 and AVX-512
    -- need FMA too)
    local function cpu_isas()
      local isas = { "scalar" }
      local info = helper.read_file("/proc/cpuinfo") or ""
      local flags = {}
      for f in (info:match("\nflags%s*:([^\n]*)") or ""):gmatch("%S+") do flags[f] = true end
      if flags.avx2 and flags.fma then isas[#isas + 1] = "avx2" end
      if flags.avx512f and flags.fma then isas[#isas + 1] = "avx512" end
      if info:find("\nFeatures%s*:[^\n]*asimd") then isas[#isas + 1] = "neon" end
      return isas
    end
    local ISAS = cpu_isas()

    --- Makes inputs for a config: Q, K, V (and seqlens_k, mask); returns the
    -- argument list for `attngen run` without -o.
    local function inputs(d, cfg, case)
      local b, lq, lk = case.batch or 2, case.lq, case.lk
      local dt = case.dtype or "f32"
      local function rnd(name, seed, dtype, ...)
        local p = d .. "/" .. name .. ".npy"
        local code, _, err = npy("random", p, dtype, tostring(seed), ...)
        assert(code == 0, err)
        return p
      end
      local args = {
        "--q", rnd("q", 11, dt, b, lq, cfg.heads_q, cfg.head_dim),
        "--k", rnd("k", 12, dt, b, lk, cfg.heads_kv, cfg.head_dim),
        "--v", rnd("v", 13, dt, b, lk, cfg.heads_kv, cfg.head_dim_v),
      }
      if cfg.padding then
        local p = d .. "/s.npy"
        local argv = { "ints", p }
        for i = 1, b do argv[#argv + 1] = tostring(case.seqlens and case.seqlens[i] or lk) end
        assert.equal(0, (npy(argv)))
        args[#args + 1] = "--seqlens-k"
        args[#args + 1] = p
      end
      if cfg.mask ~= "none" then
        local dtype = cfg.mask == "bias" and "f32" or (case.mask_dtype or "b1")
        local p
        if case.mask_4d then
          p = rnd("m", 14, dtype, b, cfg.heads_q, lq, lk)
        else
          p = rnd("m", 14, dtype, lq, lk)
        end
        args[#args + 1] = "--mask"
        args[#args + 1] = p
      end
      if cfg.qk_norm then -- the weights of the query rows' norm
        args[#args + 1] = "--q-norm-w"
        args[#args + 1] = rnd("qn", 15, "f32", cfg.head_dim)
      end
      return args
    end

    --- Appends b's items to a copy of a.
    local function cat(a, b)
      local t = {}
      for _, x in ipairs(a) do t[#t + 1] = x end
      for _, x in ipairs(b) do t[#t + 1] = x end
      return t
    end

    local function compare(a, ref)
      local code, out, err = npy("compare", a, ref)
      assert.equal(0, code, ("%s vs %s: %s%s"):format(a, ref, out, err))
    end

    -- each distinct config + --set list compiles once (~3 s); shapes are
    -- small, with Lq != Lk so that the bottom-right alignment matters.  The
    -- cases are what run reads or lays out differently (batch and GQA shapes,
    -- padding, masks, storage types, the paths a shape takes); options that
    -- change only the kernel (windows, softcap, ALiBi) are the kernel tests'
    -- and check's, on every test config
    local CASES = {
      { config = "gpt2", lq = 5, lk = 9, what = "preset, causal, Lq < Lk" },
      { config = "gpt2", lq = 9, lk = 4, what = "preset, causal, Lq > Lk (rows with no key)" },
      { config = "gpt2", lq = 3, lk = 7, dtype = "f64", batch = 1, what = "f64 inputs" },
      { config = "bert_base", lq = 6, lk = 9, batch = 3, seqlens = { 9, 4, 0 }, what = "padding, ragged seqlens_k" },
      { config = "mistral_7b", set = { "heads_q=4", "heads_kv=2", "head_dim=16", "sliding_window=4",
        "global_tokens=2" }, lq = 8, lk = 12, what = "GQA, causal sliding window + global tokens" },
      { config = "vit_b16", set = { 'mask="bool"' }, lq = 5, lk = 8, mask_dtype = "u1", what = "bool mask [Lq][Lk]" },
      { config = "configs/test/t_bool_mask.lua", lq = 6, lk = 10, mask_4d = true,
        what = "bool mask [B][Hq][Lq][Lk] with causal" },
      { config = "configs/test/t_bias_alibi.lua", lq = 5, lk = 7, what = "bias + ALiBi, 6 heads" },
      -- storage types: inputs converted to the config's types as a C caller stores them
      { config = "configs/test/t_f16_odd.lua", lq = 5, lk = 9, dtype = "f16", what = "f16 inputs, f16 O" },
      { config = "configs/test/t_f16_cache.lua", lq = 2, lk = 40, seqlens = { 40, 17 },
        what = "f32 inputs into an f16 cache, decode path" },
      { config = "configs/test/t_bf16_all.lua", lq = 6, lk = 11, seqlens = { 11, 7 }, what = "bf16 storage" },
      { config = "configs/test/t_q8_0.lua", lq = 2, lk = 40,
        what = "f32 inputs quantized into a q8_0 cache, decode path" },
      { config = "configs/test/t_q4_0.lua", lq = 20, lk = 33, seqlens = { 33, 9 },
        what = "f32 inputs quantized into a q4_0 cache, prefill path, padding" },
      { config = "configs/test/t_q8_0_int8.lua", lq = 3, lk = 40,
        what = "matmul int8: Q quantized by the kernel and by the reference, decode path" },
    }

    for i, case in ipairs(CASES) do
      local label = case.config
      for _, s in ipairs(case.set or {}) do label = label .. " --set " .. s end
      it(("matches the reference: %s (%s) on %s"):format(label, case.what, table.concat(ISAS, ", ")), function()
        local sets = {}
        for _, s in ipairs(case.set or {}) do sets[#sets + 1] = "--set" sets[#sets + 1] = s end
        local cfg = assert(presets.load(case.config, case.set))
        local d = folder("run" .. i)
        local base = cat({ "run", case.config }, sets)
        base = cat(base, inputs(d, cfg, case))
        local ref, ref_lse = d .. "/ref.npy", d .. "/ref_lse.npy"
        local code, _, err = attngen(cat(base, { "--reference", "-o", ref, "--lse", ref_lse }))
        assert.equal(0, code, err)
        for _, isa in ipairs(ISAS) do
          local o, lse = d .. "/o_" .. isa .. ".npy", d .. "/lse_" .. isa .. ".npy"
          code, _, err = attngen(cat(base, { "--isa", isa, "-o", o, "--lse", lse }))
          assert.equal(0, code, isa .. ": " .. err)
          compare(o, ref)
          compare(lse, ref_lse)
        end
        if i == 1 then -- the dispatcher's own choice, and a thread count
          local o = d .. "/o_auto.npy"
          code, _, err = attngen(cat(base, { "--threads", "1", "-o", o }))
          assert.equal(0, code, err)
          compare(o, ref)
        end
      end)
    end

    --- A backward pass's extra output (flag: --dsinks, --drel, --dq-norm-w) on each ISA against the reference's:
    -- t.config, t.folder, t.param (its input's file, made by t.make(d, cfg); none where inputs() passes
    -- it) and t.extra (more flags).
    local function bwd_extra_matches(t)
      local cfg = assert(presets.load(t.config))
      local d = folder(t.folder)
      local b, lq, lk = 2, 9, 20
      assert.equal(0, (npy("random", d .. "/do.npy", "f32", "32", b, lq, cfg.heads_q, cfg.head_dim_v or cfg.head_dim)))
      local base = cat(cat({ "run", t.config }, inputs(d, cfg, { batch = b, lq = lq, lk = lk, seqlens = t.seqlens })),
        cat(t.param and { t.param, t.make(d, cfg), "--do", d .. "/do.npy" } or { "--do", d .. "/do.npy" },
          t.extra or {}))
      local function outputs(tag)
        local o = {}
        for _, g in ipairs({ { "-o", "o" }, { "--dq", "dq" }, { "--dk", "dk" }, { "--dv", "dv" },
          { t.flag, "extra" } }) do
          o[#o + 1] = g[1]
          o[#o + 1] = ("%s/%s_%s.npy"):format(d, g[2], tag)
        end
        return o
      end
      local code, _, err = attngen(cat(cat(base, { "--reference" }), outputs("ref")))
      assert.equal(0, code, err)
      for _, isa in ipairs(ISAS) do
        code, _, err = attngen(cat(cat(base, { "--isa", isa }), outputs(isa)))
        assert.equal(0, code, isa .. ": " .. err)
        compare(d .. "/extra_" .. isa .. ".npy", d .. "/extra_ref.npy")
      end
    end

    it("--do with --dsinks: the sink logits' gradient matches the reference's (t_bwd_masks: dropout, sinks)",
      function()
      bwd_extra_matches({ config = "configs/test/t_bwd_masks.lua", folder = "bwd_sinks", flag = "--dsinks",
        param = "--sinks", extra = { "--dropout-p", "0.2", "--dropout-seed", "5" },
        make = function(d, cfg)
          assert.equal(0, (npy("random", d .. "/sinks.npy", "f32", "31", cfg.heads_q)))
          return d .. "/sinks.npy"
        end })
    end)

    it("--do with --drel: the relative position table's gradient matches the reference's (t_rel_t5: padding)",
      function()
      bwd_extra_matches({ config = "configs/test/t_rel_t5.lua", folder = "bwd_rel", flag = "--drel",
        param = "--rel-table", seqlens = { 20, 13 },
        make = function(d, cfg)
          assert.equal(0, (npy("random", d .. "/rel.npy", "f32", "33", cfg.rel_bias.buckets, cfg.heads_q)))
          return d .. "/rel.npy"
        end })
    end)

    it("--do with --dq-norm-w: the query norm weights' gradient matches the reference's (t_bwd_f16_sparse)",
      function()
      -- inputs() passes the config's --q-norm-w; f32 storage, so that the kernel's O (which its backward
      -- reads) is the reference's to f32 rounding
      bwd_extra_matches({ config = "configs/test/t_bwd_f16_sparse.lua", folder = "bwd_qnorm", flag = "--dq-norm-w",
        seqlens = { 20, 13 }, extra = { "--set", 'dtype="f32"' } })
    end)

    it("--block-table: K and V pools of shuffled pages match the reference (NHD, pages of 3; HND, pages of 1)",
      function()
      for n, case in ipairs({ { config = "configs/test/t_paged_p3.lua", pages = 20, page = 3, order = "NHD" },
        { config = "configs/test/t_paged_p1.lua", pages = 40, page = 1, order = "HND" } }) do
        local cfg = assert(presets.load(case.config))
        local d = folder("paged" .. n)
        local function rnd(name, seed, dim)
          local p = d .. "/" .. name .. ".npy"
          local shape = case.order == "HND" and { case.pages, cfg.heads_kv, case.page, dim }
            or { case.pages, case.page, cfg.heads_kv, dim }
          assert.equal(0, (npy("random", p, "f32", tostring(seed), shape[1], shape[2], shape[3], shape[4])))
          return p
        end
        -- two sequences of up to 12 pages each (36 keys of pages of 3), in a shuffled order; keys
        -- past a sequence's length on entries no page (never read)
        local per = 36 / case.page
        local bt = { "table", d .. "/bt.npy", "2" }
        for b = 0, 1 do
          for e = 0, per - 1 do bt[#bt + 1] = tostring((7 * (b * per + e) + 3) % case.pages) end
        end
        for e = 0, per - 1 do
          if e * case.page >= 20 then bt[3 + per + e + 1] = "2147483647" end
        end
        assert.equal(0, (npy(bt)))
        local base = { "run", case.config, "--q", d .. "/q.npy", "--k", rnd("k", 22, cfg.head_dim),
          "--v", rnd("v", 23, cfg.head_dim_v), "--block-table", d .. "/bt.npy", "--seqlens-k", d .. "/s.npy" }
        assert.equal(0, (npy("random", d .. "/q.npy", "f32", "21", "2", "3", cfg.heads_q, cfg.head_dim)))
        assert.equal(0, (npy("ints", d .. "/s.npy", "36", "20")))
        local ref = d .. "/ref.npy"
        local code, _, err = attngen(cat(base, { "--reference", "-o", ref }))
        assert.equal(0, code, err)
        for _, isa in ipairs(ISAS) do
          local o = d .. "/o_" .. isa .. ".npy"
          code, _, err = attngen(cat(base, { "--isa", isa, "-o", o }))
          assert.equal(0, code, isa .. ": " .. err)
          compare(o, ref)
        end
        if n == 1 then
          fails({ "run", case.config, "--q", d .. "/q.npy", "--k", d .. "/k.npy", "--v", d .. "/v.npy",
            "--seqlens-k", d .. "/s.npy", "-o", d .. "/x.npy" }, "--block-table: required")
          -- the first sequence's first page is no page of the 20
          local bad = { "table", d .. "/bad.npy", "2", "20" }
          for e = 1, 23 do bad[#bad + 1] = tostring(e % 20) end
          assert.equal(0, (npy(bad)))
          fails({ "run", case.config, "--q", d .. "/q.npy", "--k", d .. "/k.npy", "--v", d .. "/v.npy",
            "--seqlens-k", d .. "/s.npy", "--block-table", d .. "/bad.npy", "-o", d .. "/x.npy" },
            "a block-table entry names no page")
          fails({ "run", case.config, "--q", d .. "/q.npy", "--k", d .. "/q.npy", "--v", d .. "/v.npy",
            "--seqlens-k", d .. "/s.npy", "--block-table", d .. "/bt.npy", "-o", d .. "/x.npy" },
            "expected a pool of pages [pages][page][heads_kv][dim] (order NHD)")
        end
      end
    end)

    it("--k-new, --v-new: appends to the cache as the reference does (RoPE; paged, pages of 3)", function()
      for n, case in ipairs({ { config = "configs/test/t_rope.lua", lens = { "10", "17" }, lk = 20 },
        { config = "configs/test/t_paged_p3.lua", lens = { "4", "13" }, lk = 18, pages = 14 } }) do
        local cfg = assert(presets.load(case.config))
        local d = folder("append" .. n)
        local function rnd(name, seed, ...)
          assert.equal(0, (npy("random", d .. "/" .. name .. ".npy", "f32", tostring(seed), ...)))
          return d .. "/" .. name .. ".npy"
        end
        local base = { "run", case.config, "--q", rnd("q", 31, 2, 3, cfg.heads_q, cfg.head_dim),
          "--seqlens-k", d .. "/s.npy" }
        if case.pages then -- sequence b's keys on pages 7b + 1, 7b + 2, ... (6 pages of 3 each)
          local bt = { "table", d .. "/bt.npy", "2" }
          for b = 0, 1 do
            for e = 0, 5 do bt[#bt + 1] = tostring(7 * b + e + 1) end
          end
          assert.equal(0, (npy(bt)))
          base = cat(base, { "--block-table", d .. "/bt.npy", "--k", rnd("k", 32, case.pages, 3, cfg.heads_kv,
            cfg.head_dim), "--v", rnd("v", 33, case.pages, 3, cfg.heads_kv, cfg.head_dim_v) })
        else
          base = cat(base, { "--k", rnd("k", 32, 2, case.lk, cfg.heads_kv, cfg.head_dim),
            "--v", rnd("v", 33, 2, case.lk, cfg.heads_kv, cfg.head_dim_v) })
        end
        assert.equal(0, (npy("ints", d .. "/s.npy", case.lens[1], case.lens[2])))
        local new = { "--k-new", rnd("kn", 34, 2, 3, cfg.heads_kv, cfg.head_dim),
          "--v-new", rnd("vn", 35, 2, 3, cfg.heads_kv, cfg.head_dim_v) }
        local knw = {} -- t_rope: --k-norm-w
        if cfg.qk_norm then -- t_rope: the query rows and the new key rows RMS-normed
          base = cat(base, { "--q-norm-w", rnd("qn", 36, cfg.head_dim) })
          knw = { "--k-norm-w", rnd("knw", 37, cfg.head_dim) }
          new = cat(new, knw)
          fails(cat(base, { "--k-new", new[2], "--v-new", new[4], "-o", d .. "/x.npy" }),
            "--k-norm-w: required with --k-new")
        end
        local code, _, err = attngen(cat(cat(base, new), { "--reference", "-o", d .. "/ref.npy",
          "--k-out", d .. "/k_ref.npy", "--v-out", d .. "/v_ref.npy" }))
        assert.equal(0, code, err)
        code, _, err = attngen(cat(cat(base, new), { "-o", d .. "/o.npy", "--k-out", d .. "/k2.npy",
          "--v-out", d .. "/v2.npy" }))
        assert.equal(0, code, err)
        compare(d .. "/o.npy", d .. "/ref.npy")
        compare(d .. "/k2.npy", d .. "/k_ref.npy")
        compare(d .. "/v2.npy", d .. "/v_ref.npy")
        for _, isa in ipairs(ISAS) do -- each variant: the kernel's store, then that variant's attention
          local o, k2 = d .. "/o_" .. isa .. ".npy", d .. "/k2_" .. isa .. ".npy"
          code, _, err = attngen(cat(cat(base, new), { "--isa", isa, "-o", o, "--k-out", k2 }))
          assert.equal(0, code, isa .. ": " .. err)
          compare(o, d .. "/ref.npy")
          assert.equal(helper.read_file(d .. "/k2.npy"), helper.read_file(k2), isa)
        end
        -- the new rows changed the cache (and the output): a run over the stored cache, the lengths
        -- after the call, gives O again
        assert.not_equal(helper.read_file(d .. "/k.npy"), helper.read_file(d .. "/k2.npy"))
        local after = { "ints", d .. "/s2.npy", tostring(case.lens[1] + 3), tostring(case.lens[2] + 3) }
        assert.equal(0, (npy(after)))
        local again = {}
        for i, a in ipairs(base) do
          again[i] = a == d .. "/k.npy" and d .. "/k2.npy" or a == d .. "/v.npy" and d .. "/v2.npy"
            or a == d .. "/s.npy" and d .. "/s2.npy" or a
        end
        code, _, err = attngen(cat(again, { "-o", d .. "/o2.npy" }))
        assert.equal(0, code, err)
        compare(d .. "/o2.npy", d .. "/o.npy")
        code, _, err = attngen(cat(base, { "-o", d .. "/o_before.npy" }))
        assert.equal(0, code, err)
        assert.not_equal(0, (npy("compare", d .. "/o_before.npy", d .. "/o.npy")))
        if n == 1 then -- --k-out may name --k: the cache updated in place
          code, _, err = attngen(cat(cat(base, new), { "-o", d .. "/o3.npy", "--k-out", d .. "/k.npy",
            "--v-out", d .. "/v.npy" }))
          assert.equal(0, code, err)
          assert.equal(helper.read_file(d .. "/k2.npy"), helper.read_file(d .. "/k.npy"))
          assert.equal(helper.read_file(d .. "/v2.npy"), helper.read_file(d .. "/v.npy"))
          fails(cat(cat(base, knw), { "--k-new", d .. "/kn.npy", "-o", d .. "/x.npy" }),
            "--v-new: required with --k-new")
        end
      end
    end)

    it("runs a long cache in chunks (prefill_chunk) to the same bits of O, the LSE and the weights", function()
      local wconfig = "configs/test/t_weights_causal_gqa.lua" -- chunks of 32 keys
      local cfg = assert(presets.load(wconfig))
      local d = folder("chunks")
      -- the widest variant this CPU runs alone (two kernels compile; the chunks
      -- are the driver's loop, the same on every ISA)
      local base = cat({ "run", wconfig, "--set", ('isa={"%s"}'):format(ISAS[#ISAS]) },
        inputs(d, cfg, { lq = 20, lk = 150, seqlens = { 150, 77 } }))
      local files = {}
      for _, chunk in ipairs({ "32", "0" }) do -- five chunks and the last partial, then one pass
        local o, lse, w = d .. "/o" .. chunk .. ".npy", d .. "/lse" .. chunk .. ".npy", d .. "/w" .. chunk .. ".npy"
        local code, _, err = attngen(cat(base, { "--set", "prefill_chunk=" .. chunk, "-o", o, "--lse", lse,
          "--weights", w }))
        assert.equal(0, code, err)
        files[#files + 1] = { o, lse, w }
      end
      for k = 1, 3 do
        assert.equal(helper.read_file(files[2][k]), helper.read_file(files[1][k]), files[1][k])
      end
      local ref = d .. "/ref.npy"
      assert.equal(0, (attngen(cat(base, { "--reference", "-o", ref }))))
      compare(files[1][1], ref)
    end)

    it("--weights writes P [B][Hq][Lq][Lk] (or [B][Lq][Lk] with --average-heads) that match the reference", function()
      local wconfig = "configs/test/t_weights_causal_gqa.lua"
      local cfg = assert(presets.load(wconfig))
      local d = folder("weights")
      local base = cat({ "run", wconfig }, inputs(d, cfg, { lq = 5, lk = 9, seqlens = { 9, 4 } }))
      --- the shape in a .npy header, as a string "(2, 6, 5, 9)"
      local function shape(p)
        return helper.read_file(p):match("'shape': (%b())")
      end
      local code, _, err = attngen(cat(base, { "--reference", "-o", d .. "/ref.npy", "--weights", d .. "/w_ref.npy" }))
      assert.equal(0, code, err)
      code, _, err = attngen(cat(base, { "-o", d .. "/o.npy", "--weights", d .. "/w.npy" }))
      assert.equal(0, code, err)
      assert.equal("(2, 6, 5, 9)", shape(d .. "/w.npy"))
      compare(d .. "/w.npy", d .. "/w_ref.npy")
      code, _, err = attngen(cat(base, { "--reference", "-o", d .. "/ref.npy", "--weights", d .. "/a_ref.npy",
        "--average-heads" }))
      assert.equal(0, code, err)
      code, _, err = attngen(cat(base, { "-o", d .. "/o.npy", "--weights", d .. "/a.npy", "--average-heads" }))
      assert.equal(0, code, err)
      assert.equal("(2, 5, 9)", shape(d .. "/a.npy"))
      compare(d .. "/a.npy", d .. "/a_ref.npy")
    end)

    it("--entropy writes E [B][Hq][Lq] that matches the reference; --random-inputs draws and writes Q, K, V",
      function()
      local econfig = "configs/test/t_dropout_weights_bf16.lua"
      local d = folder("entropy")
      local function shape(p) return helper.read_file(p):match("'shape': (%b())") end
      local drawn = { "run", econfig, "--random-inputs", "5", "--batch", "2", "--seq-q", "6", "--seq-k", "40" }
      local code, _, err = attngen(cat(drawn, { "-o", d .. "/o.npy", "--entropy", d .. "/e.npy",
        "--q", d .. "/q.npy", "--k", d .. "/k.npy", "--v", d .. "/v.npy" }))
      assert.equal(0, code, err)
      assert.equal("(2, 6, 4, 64)", shape(d .. "/q.npy"))
      assert.equal("(2, 40, 1, 64)", shape(d .. "/k.npy"))
      assert.equal("(2, 4, 6)", shape(d .. "/e.npy"))
      -- the same seed draws the same inputs
      code, _, err = attngen(cat(drawn, { "-o", d .. "/o2.npy", "--q", d .. "/q2.npy" }))
      assert.equal(0, code, err)
      assert.equal(helper.read_file(d .. "/q.npy"), helper.read_file(d .. "/q2.npy"))
      code, _, err = attngen({ "run", econfig, "--q", d .. "/q.npy", "--k", d .. "/k.npy", "--v", d .. "/v.npy",
        "--reference", "-o", d .. "/ref.npy", "--entropy", d .. "/e_ref.npy" })
      assert.equal(0, code, err)
      compare(d .. "/e.npy", d .. "/e_ref.npy")
      -- one-line errors
      local function refused(args, pattern)
        local c, out, e = attngen(args)
        assert.equal(2, c, e)
        assert.equal("", out)
        assert.truthy(e:find(pattern), e)
      end
      refused({ "run", "configs/test/t_weights_causal_gqa.lua", "--random-inputs", "1", "--seq-q", "2", "--seq-k",
        "3", "--seqlens-k", d .. "/none.npy", "-o", d .. "/x.npy", "--entropy", d .. "/x_e.npy" },
        "has no entropy %(entropy = true%), so %-%-entropy is not accepted")
      refused({ "run", econfig, "--q", d .. "/q.npy", "--k", d .. "/k.npy", "--v", d .. "/v.npy", "--seq-q", "2",
        "-o", d .. "/x.npy" }, "%-%-seq%-q: only with %-%-random%-inputs")
      refused({ "run", econfig, "--random-inputs", "1", "--seq-q", "2", "-o", d .. "/x.npy" },
        "%-%-seq%-k: required with %-%-random%-inputs")
      refused({ "run", econfig, "--random-inputs", "x", "--seq-q", "2", "--seq-k", "2", "-o", d .. "/x.npy" },
        "%-%-random%-inputs: expected an integer")
    end)

    it("--dropout-p/--dropout-seed/--dropout-offset: the kernel and the reference draw the same mask", function()
      local dconfig = "configs/test/t_dropout_weights_bf16.lua"
      local cfg = assert(presets.load(dconfig))
      local d = folder("dropout")
      local base = cat({ "run", dconfig }, inputs(d, cfg, { lq = 6, lk = 40 }))
      local drop = { "--dropout-p", "0.3", "--dropout-seed", "18446744073709551615", "--dropout-offset", "7" }
      local code, _, err = attngen(cat(cat(base, drop), { "--reference", "-o", d .. "/ref.npy", "--weights",
        d .. "/w_ref.npy" }))
      assert.equal(0, code, err)
      code, _, err = attngen(cat(cat(base, drop), { "-o", d .. "/o.npy", "--weights", d .. "/w.npy" }))
      assert.equal(0, code, err)
      compare(d .. "/w.npy", d .. "/w_ref.npy")
      -- another offset: other weights
      code, _, err = attngen(cat(base, { "--dropout-p", "0.3", "--dropout-offset", "8", "-o", d .. "/o8.npy",
        "--weights", d .. "/w8.npy" }))
      assert.equal(0, code, err)
      assert.are_not.equal(helper.read_file(d .. "/w.npy"), helper.read_file(d .. "/w8.npy"))
    end)

    it("--state-in/--state-out carry a linear config's state from call to call, in place too", function()
      local lconfig = "configs/test/t_linear_state.lua"
      local cfg = setmetatable({ mask = "none" }, { __index = assert(presets.load(lconfig)) }) -- no mask file
      local d1, d2 = folder("linear1"), folder("linear2")
      local first = cat({ "run", lconfig }, inputs(d1, cfg, { lq = 5, lk = 5 }))
      local second = cat({ "run", lconfig }, inputs(d2, cfg, { lq = 3, lk = 3 }))
      local function run(args)
        local code, _, err = attngen(args)
        assert.equal(0, code, err)
      end
      -- kernel: the first call from a zero state, the second from the file, updated in place
      run(cat(first, { "-o", d1 .. "/o.npy", "--state-out", d1 .. "/s.npy", d1 .. "/z.npy" }))
      run(cat(second, { "-o", d2 .. "/o.npy", "--state-in", d1 .. "/s.npy", d1 .. "/z.npy",
        "--state-out", d1 .. "/s.npy", d1 .. "/z.npy" }))
      -- the reference, the same chain through other files
      run(cat(first, { "--reference", "-o", d1 .. "/ref.npy", "--state-out", d1 .. "/s_ref.npy", d1 .. "/z_ref.npy" }))
      compare(d1 .. "/o.npy", d1 .. "/ref.npy")
      run(cat(second, { "--reference", "-o", d2 .. "/ref.npy", "--state-in", d1 .. "/s_ref.npy", d1 .. "/z_ref.npy",
        "--state-out", d2 .. "/s_ref.npy", d2 .. "/z_ref.npy" }))
      compare(d2 .. "/o.npy", d2 .. "/ref.npy")
      compare(d1 .. "/s.npy", d2 .. "/s_ref.npy")
      compare(d1 .. "/z.npy", d2 .. "/z_ref.npy")
      assert.equal("(2, 2, 16, 16)", helper.read_file(d1 .. "/s.npy"):match("'shape': (%b())"))
    end)

    --- Inputs of an additive or luong config: S, H and the parameters its
    -- score reads (--u instead of --w-h with case.u), seqlens_k, the mask;
    -- returns the argument list for `attngen run` without -o.
    local function classic_inputs(d, cfg, case)
      local b, lq, lk = case.batch or 2, case.lq, case.lk
      local dt = case.dtype or "f32"
      local ds, dh, da = cfg.query_dim, cfg.key_dim, cfg.attn_dim
      local seed = 20
      local args = {}
      local function rnd(flag, name, ...)
        local p = d .. "/" .. name .. ".npy"
        seed = seed + 1
        local code, _, err = npy("random", p, dt, tostring(seed), ...)
        assert(code == 0, err)
        args[#args + 1] = flag
        args[#args + 1] = p
      end
      if case.no_batch then rnd("--s", "s", lq, ds) else rnd("--s", "s", b, lq, ds) end
      rnd("--h", "h", b, lk, dh)
      local score = require("families").of(cfg).classic.score(cfg)
      if score == "additive" then
        rnd("--w-s", "w_s", da, ds)
        if case.u then rnd("--u", "u", b, lk, da) else rnd("--w-h", "w_h", da, dh) end
      elseif score == "general" then
        rnd("--w", "w", dh, ds)
      elseif score == "concat" then
        rnd("--w", "w", da, dh + ds)
      end
      if score == "additive" or score == "concat" then rnd("--v-attn", "v", da) end
      if cfg.bias then rnd("--b", "b", da) end
      if cfg.padding then
        local p = d .. "/sl.npy"
        local argv = { "ints", p }
        for i = 1, b do argv[#argv + 1] = tostring(case.seqlens and case.seqlens[i] or lk) end
        assert.equal(0, (npy(argv)))
        args[#args + 1] = "--seqlens-k"
        args[#args + 1] = p
      end
      if cfg.mask == "bool" then
        local p = d .. "/m.npy"
        assert.equal(0, (npy("random", p, "b1", "14", lq, lk)))
        args[#args + 1] = "--mask"
        args[#args + 1] = p
      end
      return args
    end

    -- additive and luong (attn_classic_args): C and the weights A against
    -- the reference on every ISA this CPU runs
    local CLASSIC = {
      { config = "configs/test/t_additive.lua", lq = 3, lk = 9, what = "additive, W_h" },
      { config = "configs/test/t_additive.lua", lq = 3, lk = 9, u = true, what = "additive, U precomputed" },
      { config = "configs/test/t_additive.lua", lq = 1, lk = 7, batch = 1, no_batch = true,
        what = "additive, S without the batch dim" },
      { config = "configs/test/t_additive_bias_mask.lua", lq = 4, lk = 9, seqlens = { 9, 3 },
        what = "additive, bias, padding, bool mask" },
      { config = "configs/test/t_additive_bf16.lua", lq = 2, lk = 6, u = true, seqlens = { 6, 0 },
        what = "additive, bf16 storage, U, a sequence with no key" },
      { config = "configs/test/t_luong_dot.lua", lq = 5, lk = 8, seqlens = { 8, 5 }, what = "luong dot" },
      { config = "configs/test/t_luong_general.lua", lq = 3, lk = 11, what = "luong general, bool mask" },
      { config = "configs/test/t_luong_concat.lua", lq = 3, lk = 10, seqlens = { 10, 7 },
        what = "luong concat, bias, padding, bool mask" },
      { config = "configs/test/t_luong_f16.lua", lq = 2, lk = 9, dtype = "f16", seqlens = { 9, 2 },
        what = "luong general, f16 inputs into an f16 H" },
    }
    for i, case in ipairs(CLASSIC) do
      it(("matches the reference: %s (%s) on %s"):format(case.config, case.what, table.concat(ISAS, ", ")), function()
        local cfg = assert(presets.load(case.config))
        local d = folder("classic" .. i)
        local base = cat({ "run", case.config }, classic_inputs(d, cfg, case))
        local ref, ref_a = d .. "/ref.npy", d .. "/ref_a.npy"
        local code, _, err = attngen(cat(base, { "--reference", "-o", ref, "--weights", ref_a }))
        assert.equal(0, code, err)
        local b = case.no_batch and "" or ("%d, "):format(case.batch or 2)
        assert.equal(("(%s%d, %d)"):format(b, case.lq, cfg.key_dim), helper.read_file(ref):match("'shape': (%b())"))
        assert.equal(("(%s%d, %d)"):format(b, case.lq, case.lk), helper.read_file(ref_a):match("'shape': (%b())"))
        for _, isa in ipairs(ISAS) do
          local c, a = d .. "/c_" .. isa .. ".npy", d .. "/a_" .. isa .. ".npy"
          code, _, err = attngen(cat(base, { "--isa", isa, "-o", c, "--weights", a }))
          assert.equal(0, code, isa .. ": " .. err)
          compare(c, ref)
          compare(a, ref_a)
        end
        local c = d .. "/c_auto.npy" -- the dispatcher's own choice, C alone
        code, _, err = attngen(cat(base, { "--threads", "1", "-o", c }))
        assert.equal(0, code, err)
        compare(c, ref)
      end)
    end

    it("--reference ignores --isa, even an unknown one", function()
      local cfg = assert(presets.load("gpt2"))
      local d = folder("refisa")
      local args = cat({ "run", "gpt2" }, inputs(d, cfg, { lq = 2, lk = 3, batch = 1 }))
      local code, _, err = attngen(cat(args, { "--reference", "--isa", "sse9", "-o", d .. "/r.npy" }))
      assert.equal(0, code, err)
      fails(cat(args, { "--isa", "sse9", "-o", d .. "/o.npy" }), "sse9")
      assert.is_false(helper.exists(d .. "/o.npy"))
    end)

    describe("errors: one line, exit 2, no output file", function()
      local cfg, d, out, good
      setup(function()
        cfg = assert(presets.load("gpt2"))
        d = folder("runerr")
        good = cat({ "run", "gpt2" }, inputs(d, cfg, { lq = 3, lk = 5, batch = 1 }))
      end)
      before_each(function() out = folder("out") end)
      after_each(function()
        assert.same({}, helper.ls(out), "something was written")
      end)

      --- good's arguments with --q replaced.
      local function with_q(p)
        local t = {}
        for j, a in ipairs(good) do t[j] = (good[j - 1] == "--q") and p or a end
        return t
      end

      it("Q of the wrong dtype", function()
        local p = d .. "/q_u8.npy"
        assert.equal(0, (npy("random", p, "u1", "1", "1", "3", cfg.heads_q, cfg.head_dim)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy", "--lse", out .. "/l.npy" }), p, "uint8")
        p = d .. "/q_i32.npy"
        assert.equal(0, (npy("random", p, "i32", "1", "1", "3", cfg.heads_q, cfg.head_dim)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p, "int32")
      end)

      it("a truncated file", function()
        local q = helper.read_file(good[4])
        local p = helper.write_file(d .. "/q_short.npy", q:sub(1, #q - 100))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p)
        p = helper.write_file(d .. "/q_header.npy", q:sub(1, 40))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p)
        p = helper.write_file(d .. "/q_empty.npy", "")
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p)
        p = helper.write_file(d .. "/q_text.npy", "not an npy file at all\n")
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p)
      end)

      it("a shape that does not match the config", function()
        local p = d .. "/q_dim.npy"
        assert.equal(0, (npy("random", p, "f32", "1", "1", "3", cfg.heads_q, cfg.head_dim + 1)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p, "head_dim")
        p = d .. "/q_heads.npy"
        assert.equal(0, (npy("random", p, "f32", "1", "1", "3", cfg.heads_q - 1, cfg.head_dim)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p, "heads_q")
        p = d .. "/q_2d.npy"
        assert.equal(0, (npy("random", p, "f32", "1", "3", cfg.head_dim)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), p, "4-D")
        p = d .. "/q_batch.npy"
        assert.equal(0, (npy("random", p, "f32", "1", "2", "3", cfg.heads_q, cfg.head_dim)))
        fails(cat(with_q(p), { "-o", out .. "/o.npy" }), "batch")
      end)

      it("a missing input file", function()
        fails(cat(with_q(d .. "/nope.npy"), { "-o", out .. "/o.npy" }), d .. "/nope.npy")
      end)

      it("missing --seqlens-k for a padding config", function()
        local bcfg = assert(presets.load("bert_base"))
        local args = cat({ "run", "bert_base" }, inputs(folder("pad"), bcfg, { lq = 3, lk = 4, batch = 1 }))
        local stripped = {}
        local skip = false
        for _, a in ipairs(args) do
          if a == "--seqlens-k" then skip = true
          elseif skip then skip = false
          else stripped[#stripped + 1] = a end
        end
        fails(cat(stripped, { "-o", out .. "/o.npy" }), "--seqlens-k", "padding")
      end)

      it("--seqlens-k outside 0..seq_k", function()
        local bcfg = assert(presets.load("bert_base"))
        local args = cat({ "run", "bert_base" }, inputs(folder("pad"), bcfg,
          { lq = 3, lk = 4, batch = 2, seqlens = { 4, 5 } }))
        fails(cat(args, { "-o", out .. "/o.npy" }), "seqlens_k[1] = 5")
      end)

      it("a mask given to a config without mask", function()
        local m = d .. "/m.npy"
        assert.equal(0, (npy("random", m, "b1", "1", "3", "5")))
        fails(cat(good, { "--mask", m, "-o", out .. "/o.npy" }), m, "no mask")
      end)

      it("a mask of the wrong shape", function()
        local mcfg = assert(presets.load("configs/test/t_bool_mask.lua"))
        local args = cat({ "run", "configs/test/t_bool_mask.lua" }, inputs(folder("mask"), mcfg,
          { lq = 3, lk = 4, batch = 1 }))
        local m = d .. "/m_wrong.npy"
        assert.equal(0, (npy("random", m, "b1", "1", "4", "3")))
        for j = 1, #args do if args[j - 1] == "--mask" then args[j] = m end end
        fails(cat(args, { "-o", out .. "/o.npy" }), m, "shape")
      end)

      it("-o and --lse the same file, or a bad --threads", function()
        fails(cat(good, { "-o", out .. "/o.npy", "--lse", out .. "/o.npy" }), "--lse")
        fails(cat(good, { "-o", out .. "/o.npy", "--threads=-3" }), "--threads")
        fails(cat(good, { "-o", out .. "/o.npy", "--threads", "many" }), "many")
        fails(cat(good, { "-o", out .. "/o.npy", "--threads", "-3" }), "-3")
      end)
    end)
  end)

  -- the bench's inputs are a case of the family's table (attn_case.bench):
  -- every key of its bool mask visible, FLOPs as the case counts them
  describe("bench", function()
    it("counts the visible scores of its case, the bool mask all true, and their FLOPs (--json)", function()
      local code, out, err = attngen({ "bench", "configs/test/t_bool_mask.lua", "--seq-q", "70", "--seq-k", "70",
        "--json", "--isa", "scalar", "--no-blas", "--no-reference" })
      assert.equal(0, code, err)
      local line = out:match("[^\n]*\"visible_scores\"[^\n]*") or ""
      -- causal: 2 heads x 70 x 71 / 2 keys; 2 (D + Dv) = 80 FLOPs each
      assert.truthy(line:find('"visible_scores": 4970, "flops": 397600, "flops_counted": "visible_scores"', 1, true),
        out)
      assert.truthy(line:find('{"impl": "scalar", ', 1, true), out)
    end)

    it("counts an additive case's FLOPs as the classic families do (--json)", function()
      local code, out, err = attngen({ "bench", "configs/test/t_additive.lua", "--seq-q", "5", "--seq-k", "9",
        "--json", "--isa", "scalar", "--no-blas", "--no-reference", "--no-tanh-rate" })
      assert.equal(0, code, err)
      assert.truthy(out:find('"flops_counted": "classic"', 1, true), out)
      assert.truthy(out:find('{"impl": "scalar", ', 1, true), out)
    end)
  end)
end)
