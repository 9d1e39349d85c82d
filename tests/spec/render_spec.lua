-- Rendering: determinism, the banner, the header, ISA variants, golden files.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local config = require("config")
local schema = require("schema")
local planner = require("planner")
local render = require("render")
local presets = require("presets")
local util = require("util")
local version = require("version")

local GOLDEN_DIR = helper.root .. "/tests/golden"
-- small test configs whose rendered header is kept under tests/golden/
local GOLDEN = { "t_d3_gqa_causal", "t_longformer_padded" }

local function files_for(raw, command)
  local cfg = assert(schema.normalize(raw))
  local files = render.kernel_files(planner.plan(cfg), command or "attngen generate test")
  return files[1].text, files[2].text, cfg
end

--- The rendered files of a test config, with the command the CLI would put in the banner.
local function render_test_config(name)
  local display = "configs/test/" .. name .. ".lua"
  local cfg = assert(config.load(helper.root .. "/" .. display))
  local files = render.kernel_files(planner.plan(cfg), presets.command(display))
  return files[1].text, files[2].text, cfg
end

local function banner_of(text)
  return assert(text:match("^(/%*.-%*/\n)"), "no banner comment at the top")
end

describe("render", function()
  local EVERYTHING = { name = "r_all", heads_q = 4, heads_kv = 2, head_dim = 72, causal = true,
    sliding_window = 40, chunk = 48, global_tokens = 4, padding = true, mask = "bias", softcap = 30.0, alibi = true,
    weights = true, dropout = true, entropy = true, sparse = { pattern = "strided", stride = 6 }, prefill_chunk = 96,
    temperature = { scale = 0.1, floor = 8192 }, rel_bias = { kind = "t5", buckets = 16, max_distance = 40 },
    sinks = true, backward = true, grad_dtype = "storage" }

  describe("determinism", function()
    it("rendering the same config twice gives identical text", function()
      for _, raw in ipairs({ EVERYTHING, { name = "r_small", heads_q = 2, head_dim = 3 } }) do
        local h1, c1 = files_for(raw)
        local h2, c2 = files_for(raw)
        assert.equal(h1, h2)
        assert.equal(c1, c2)
      end
    end)

    it("does not depend on the order a config's table was built in", function()
      local a = { name = "r_ord", heads_q = 4, head_dim = 16, causal = true, mask = "bool", isa = { "scalar", "avx2" } }
      local b = {}
      for _, k in ipairs({ "isa", "mask", "causal", "head_dim", "heads_q", "name" }) do b[k] = a[k] end
      local ha, ca = files_for(a)
      local hb, cb = files_for(b)
      assert.equal(ha, hb)
      assert.equal(ca, cb)
    end)

    it("writes integers as integers (Lua 5.3+ would print 2.0)", function()
      -- a literal like 2.0 is a leak unless a template spells it itself
      local templates = ""
      for _, f in ipairs(require("pl.dir").getfiles(helper.root .. "/templates", "*.tmpl")) do
        templates = templates .. helper.read_file(f)
      end
      for _, name in ipairs({ "t_d3_gqa_causal", "t_everything", "t_d111_mqa_window", "t_alibi_causal" }) do
        local h, c = render_test_config(name)
        for _, text in ipairs({ h, c }) do
          for literal in text:gmatch("[^%w_.](%d+%.0)[^%d%w_.]") do
            assert.truthy(templates:find(literal, 1, true),
              name .. ": a float-formatted integer in the C text: " .. literal)
          end
        end
      end
    end)

    describe("generate", function()
      local tmp
      before_each(function() tmp = helper.tmpdir() end)
      after_each(function() helper.rmtree(tmp) end)

      it("writes the files once, then says unchanged and leaves the bytes alone", function()
        local generate = require("commands.generate")
        local args = { config = { helper.root .. "/configs/test/t_d1.lua" }, output = tmp, set = {}, quiet = false }
        local printed = {}
        local s = stub(_G, "print", function(line) printed[#printed + 1] = line end)
        finally(function() s:revert() end)
        assert.equal(0, generate.run(args))
        assert.same({ "wrote " .. tmp .. "/t_d1.h", "wrote " .. tmp .. "/t_d1.c" }, printed)
        local h1 = helper.read_file(tmp .. "/t_d1.h")
        local c1 = helper.read_file(tmp .. "/t_d1.c")
        printed = {}
        assert.equal(0, generate.run(args))
        assert.same({ "unchanged " .. tmp .. "/t_d1.h", "unchanged " .. tmp .. "/t_d1.c" }, printed)
        assert.equal(h1, helper.read_file(tmp .. "/t_d1.h"))
        assert.equal(c1, helper.read_file(tmp .. "/t_d1.c"))
        assert.same({ "t_d1.c", "t_d1.h" }, helper.ls(tmp)) -- no temporary files left
      end)

      it("write_atomic reports unchanged content", function()
        local p = tmp .. "/x.txt"
        assert.is_true(util.write_atomic(p, "abc"))
        assert.same({ false, "unchanged" }, { util.write_atomic(p, "abc") })
        assert.is_true(util.write_atomic(p, "abcd"))
        assert.equal("abcd", helper.read_file(p))
        assert.same({ "x.txt" }, helper.ls(tmp))
      end)
    end)
  end)

  describe("banner", function()
    local h, c, cfg = files_for(EVERYTHING, "attngen generate r_all.lua --set causal=true")

    it("starts with the generated / do not edit lines, naming the template", function()
      for tmpl, text in pairs({ ["families/sdpa.h.tmpl"] = h, ["families/sdpa.c.tmpl"] = c }) do
        local lines = helper.lines(text)
        assert.equal("/*", lines[1])
        assert.equal((" * Generated by attngen %s from templates/%s. Do not edit: regenerate with")
          :format(version.string, tmpl), lines[2])
        assert.equal(" *   attngen generate r_all.lua --set causal=true", lines[3])
      end
    end)

    it("echoes every key of the normalized config", function()
      for _, text in ipairs({ h, c }) do
        local banner = banner_of(text)
        local n = 0
        for k, v in pairs(cfg) do
          n = n + 1
          local line = (" *   %s = %s,\n"):format(k, util.serialize(v))
          assert.truthy(banner:find(line, 1, true), "banner lacks " .. line)
        end
        -- all but sliding_window, folded into window, and paged, shared_kv, rope and qk_norm, which do
        -- not go with backward (their banners: below, and t_rope's)
        assert.equal(#schema.order - 5, n)
        assert.truthy(banner:find(" *   window = { left = 39, right = 0 },", 1, true))
        assert.truthy(banner:find(' *   isa = { "avx512", "avx2", "neon", "scalar" },', 1, true))
        assert.truthy(banner:find(" *   softcap = 30,", 1, true))
        assert.truthy(banner:find(" *   chunk = 48,", 1, true))
        assert.truthy(banner:find(" *   prefill_chunk = 96,", 1, true))
        assert.truthy(banner:find(' *   sparse = { pattern = "strided", stride = 6 },', 1, true))
        assert.truthy(banner:find(" *   weights = true,", 1, true))
        assert.truthy(banner:find(" *   dropout = true,", 1, true))
        assert.truthy(banner:find(" *   entropy = true,", 1, true))
        assert.truthy(banner:find(" *   temperature = { floor = 8192, scale = 0.1 },", 1, true))
        assert.truthy(banner:find(" *   sinks = true,", 1, true))
        assert.truthy(banner:find(' *   grad_dtype = "storage",', 1, true))
      end
      local pg = files_for(helper.with(EVERYTHING, { sparse = helper.NIL, backward = helper.NIL,
        grad_dtype = helper.NIL, paged = { page = 16, order = "HND" } }))
      assert.truthy(banner_of(pg):find(' *   paged = { order = "HND", page = 16 },', 1, true))
      assert.truthy(banner_of(pg):find(" *   padding = true,", 1, true))
      local sk = files_for(helper.with(EVERYTHING, { backward = helper.NIL, grad_dtype = helper.NIL, shared_kv = true,
        head_dim_v = 40 }))
      assert.truthy(banner_of(sk):find(" *   shared_kv = true,", 1, true))
      assert.truthy(banner_of(sk):find(" *   head_dim_v = 40,", 1, true))
      local rp = files_for(helper.with(EVERYTHING, { backward = helper.NIL, grad_dtype = helper.NIL,
        rope = { style = "gptj", dim = 64, scaling = { type = "linear", factor = 2 } } }))
      local rope_line = ' *   rope = { dim = 64, scaling = { factor = 2, type = "linear" }, style = "gptj"'
      assert.truthy(banner_of(rp):find(rope_line, 1, true), banner_of(rp))
      local qh, qc = files_for(helper.with(EVERYTHING, { backward = helper.NIL, grad_dtype = helper.NIL,
        qk_norm = { eps = 1e-5, offset = 1 } }))
      assert.truthy(banner_of(qh):find(" *   qk_norm = { eps = 1e-05, offset = 1 },", 1, true), banner_of(qh))
      local spec_lines = "        .qk_norm = 1,\n        .qk_norm_eps = 1e-05,\n        .qk_norm_offset = 1"
      assert.truthy(qc:find(spec_lines, 1, true))
      assert.truthy(qh:find("qk_norm: each query row is RMS-normed", 1, true))
    end)

    it("names the alignment and the chunks in the mask line and the spec, only when set", function()
      local th, tc = files_for({ name = "r_tl", heads_q = 2, head_dim = 8, causal = "top_left", chunk = 16 })
      for _, text in ipairs({ th, tc }) do
        assert.truthy(text:find(" * Mask: causal (top-left), chunks of 16 keys.", 1, true), text:sub(1, 1500))
      end
      assert.truthy(th:find(' *   causal = "top_left",', 1, true))
      assert.truthy(tc:find("        .causal = 1,\n        .top_left = 1,\n", 1, true))
      assert.truthy(tc:find("        .window_right = 0,\n        .chunk = 16,\n", 1, true))
      local _, bc = files_for({ name = "r_br", heads_q = 2, head_dim = 8, causal = true })
      assert.truthy(bc:find(" * Mask: causal (bottom-right).", 1, true))
      assert.is_nil(bc:find(".top_left", 1, true))
      assert.is_nil(bc:find(".chunk", 1, true))
      assert.is_nil(bc:find(".sparse", 1, true))
    end)

    it("names a sparse pattern in the mask line and the spec, and echoes it causal", function()
      local th, tc = files_for({ name = "r_sp", heads_q = 2, head_dim = 8,
        sparse = { pattern = "fixed", block = 32, summary = 4 } })
      for _, text in ipairs({ th, tc }) do
        assert.truthy(text:find(" * Mask: causal (bottom-right), sparse fixed, block 32, summary 4.", 1, true),
          text:sub(1, 1500))
      end
      assert.truthy(th:find(" *   causal = true,", 1, true))
      assert.truthy(tc:find("        .window_right = 0,\n        .sparse = ATTN_SPARSE_FIXED,\n"
        .. "        .sparse_block = 32,\n        .sparse_summary = 4,\n", 1, true))
      local _, sc = files_for({ name = "r_ss", heads_q = 2, head_dim = 8, chunk = 64,
        sparse = { pattern = "strided", stride = 8 } })
      assert.truthy(sc:find(" * Mask: causal (bottom-right), chunks of 64 keys, sparse strided, stride 8.", 1, true))
      assert.truthy(sc:find("        .chunk = 64,\n        .sparse = ATTN_SPARSE_STRIDED,\n"
        .. "        .sparse_stride = 8,\n", 1, true))
      assert.is_nil(sc:find(".sparse_summary", 1, true))
    end)

    it("echoes the keys in the schema's order", function()
      local banner = banner_of(h)
      local last = 0
      for _, k in ipairs(schema.order) do
        local at = banner:find(" *   " .. k .. " = ", 1, true)
        if cfg[k] ~= nil then
          assert.is_not_nil(at, k)
          assert.is_true(at > last, k .. " is out of order")
          last = at
        end
      end
    end)

    it("states the tile and why", function()
      local banner = banner_of(h)
      local t = planner.default_tile(cfg)
      assert.truthy(banner:find((" * Tile: q = %d, kv = %d (heuristic"):format(t.q, t.kv), 1, true), banner)
      local h2 = files_for({ name = "r_t", heads_q = 1, head_dim = 8, tile = { q = 7, kv = 48 } })
      assert.truthy(banner_of(h2):find(" * Tile: q = 7, kv = 48 (set in the config).", 1, true))
    end)

    it("contains no date or time", function()
      for _, text in ipairs({ h, c }) do
        local banner = banner_of(text)
        assert.is_nil(text:find("%d%d%d%d%-%d%d%-%d%d"), "a date")
        assert.is_nil(text:find("%d%d?:%d%d:%d%d"), "a time")
        assert.is_nil(banner:find(os.date("%Y"), 1, true), "this year")
        for _, word in ipairs({ "Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ",
          "Nov ", "Dec ", "UTC", "GMT" }) do
          assert.is_nil(banner:find(word, 1, true), word)
        end
      end
    end)
  end)

  describe("header", function()
    it("declares attn_<name>_fwd and attn_<name>_kernel", function()
      local h = files_for({ name = "r_hdr", heads_q = 2, head_dim = 8 })
      assert.truthy(h:find("\nattn_status attn_r_hdr_fwd(const attn_args *args);\n", 1, true), h)
      assert.truthy(h:find("\nextern const attn_kernel attn_r_hdr_kernel;\n", 1, true), h)
      assert.truthy(h:find('#include "attn_runtime.h"', 1, true))
      assert.truthy(h:find("#ifndef ATTN_R_HDR_H\n#define ATTN_R_HDR_H\n", 1, true))
      assert.truthy(h:find('extern "C"', 1, true))
    end)

    it("the .c includes its header and defines the entry and the kernel", function()
      local _, c = files_for({ name = "r_c", heads_q = 2, head_dim = 8 })
      assert.truthy(c:find('#include "r_c.h"', 1, true))
      assert.truthy(c:find("attn_status attn_r_c_fwd(const attn_args *args)\n", 1, true))
      assert.truthy(c:find("const attn_kernel attn_r_c_kernel = {", 1, true))
    end)
  end)

  describe("ISA variants", function()
    local ALL = { "avx512", "avx2", "neon", "scalar" }

    local function check_only(isas)
      local h, c = files_for({ name = "r_isa", heads_q = 2, head_dim = 24, isa = isas })
      local want = {}
      for _, i in ipairs(isas) do want[i] = true end
      for _, isa in ipairs(ALL) do
        local fn = "attn_r_isa_fwd__" .. isa
        if want[isa] then
          assert.truthy(c:find(fn .. "(", 1, true), fn .. " is missing")
          assert.truthy(h:find(fn .. "(", 1, true), fn .. " is not declared")
        else
          assert.is_nil(c:find("__" .. isa .. "%f[^%w]"), "found an " .. isa .. " variant in the .c")
          assert.is_nil(h:find("__" .. isa .. "%f[^%w]"), "found an " .. isa .. " variant in the .h")
        end
      end
      return h, c
    end

    it("appear only for the ISAs listed in isa", function()
      local _, c = check_only({ "scalar" })
      assert.is_nil(c:find("immintrin.h", 1, true))
      assert.is_nil(c:find("arm_neon.h", 1, true))
      assert.is_nil(c:find("_mm", 1, true))
      _, c = check_only({ "avx2", "scalar" })
      assert.truthy(c:find("immintrin.h", 1, true))
      assert.is_nil(c:find("_mm512_", 1, true))
      assert.is_nil(c:find("arm_neon.h", 1, true))
      _, c = check_only({ "neon" })
      assert.truthy(c:find("arm_neon.h", 1, true))
      assert.is_nil(c:find("immintrin.h", 1, true))
      _, c = check_only({ "avx512" })
      assert.truthy(c:find("_mm512_", 1, true))
      check_only(ALL)
    end)

    it("guards each variant with its architecture's macro", function()
      local _, c = files_for({ name = "r_g", heads_q = 2, head_dim = 24 })
      assert.truthy(c:find("#if defined(__x86_64__)", 1, true))
      assert.truthy(c:find("#if defined(__aarch64__)", 1, true))
    end)

    it("store a wide output row in a loop past STORE_UNROLL_MAX vectors, unrolled below", function()
      local _, c = render_test_config("t_dv512") -- Dv = 512: 512 plain C vectors, 128 NEON ones, 32 / 64 on x86
      -- every function of the plain C variant under 150 lines (its epilogue: 512 stores unrolled before)
      for head, body in c:gmatch("\n([^\n]-__scalar%([^\n]*)\n(.-\n)}\n") do
        local _, n = body:gsub("\n", "")
        assert.is_true(n < 150, head)
      end
      local loop = "vectors, more than the planner unrolls (STORE_UNROLL_MAX): a loop */"
      for isa, looped in pairs({ scalar = true, neon = true, avx512 = false, avx2 = false }) do
        local a = assert(c:find("void attn_t_dv512_uend__" .. isa .. "(", 1, true), isa)
        local uend = c:sub(a, assert(c:find("\n}\n", a, true)))
        assert.equal(looped, uend:find(loop, 1, true) ~= nil, isa)
      end
    end)
  end)

  describe("decode prefetches", function()
    --- The text of the generated function whose definition starts with `head`.
    local function fn_text(c, head)
      local a = assert(c:find(head, 1, true), head .. " is missing")
      return c:sub(a, assert(c:find("\n}\n", a, true), "no end of " .. head))
    end

    it("the f32 pair step asks for the first lines of the keys STREAM_PAGE_AHEAD on, for the prefetcher", function()
      local sdpa = require("planner.sdpa")
      local _, c = files_for({ name = "r_pf", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512" } })
      assert.truthy(c:find(("STREAM_PAGE_AHEAD = %d"):format(sdpa.STREAM_PAGE_AHEAD), 1, true))
      local pairs_fn = fn_text(c, "static void attn_r_pf_spairs_4x2__avx512(")
      for kk = 0, 1 do
        local call = ("attn_r_pf_prefetch_key_start(&kv, jp + STREAM_PAGE_AHEAD + %d);"):format(kk)
        assert.truthy(pairs_fn:find(call, 1, true), call)
      end
      -- four lines of K and of V a key (rows of 128 floats: 8 lines)
      local starts = fn_text(c, "void attn_r_pf_prefetch_key_start(")
      local _, n = starts:gsub("__builtin_prefetch%(", "")
      assert.equal(8, n)
      -- the blocked kernel asks for them a block further, where its prefetch goes to L2: a share
      -- after each score call of the rows whose score kernels take the next block's rows, all
      -- at once before the scores of the rest (but panels, whose products take the whole next
      -- block), and what is left after the scores
      assert.truthy(c:find("const int64_t ks_end = pf != ATTN_PREFETCH_L2 || (!lanes && !pairs && !dots) ? ks"
        .. " : jn + 2 * bk < lk ? jn + 2 * bk : lk;", 1, true))
      assert.truthy(c:find("if (!(lanes || pairs)) attn_r_pf_key_starts(&kv, &ks, ks_end, ks_end - ks);", 1,
        true))
      for _, kernel in ipairs({ "dpairs_8x2", "hpairs_8x1", "dpairs_8x1" }) do
        local call = ("attn_%s_d128_f32_pf__avx512(k0, kv.k_key, qp, w->s + c * rp + hk * glp, rp, "
          .. "inside ? pr : NULL);\n"
          .. "                    attn_r_pf_key_starts(&kv, &ks, ks_end, kper);"):format(kernel)
        assert.truthy(c:find(call, 1, true), kernel)
      end
      local left = "    attn_r_pf_key_starts(&kv, &ks, ks_end, ks_end - ks); /* those the score calls left"
      assert.truthy(c:find(left, 1, true))
      -- a 16-bit cache's score kernels take no rows: all at once, as before
      _, c = files_for({ name = "r_pf16b", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512" },
        dtype = { q = "f32", kv = "f16", o = "f32" } })
      assert.truthy(c:find("const int64_t ks_end = pf != ATTN_PREFETCH_L2 ? ks : jn + 2 * bk < lk ? jn + 2 * bk : lk;",
        1, true))
      local further = "starts on their pages. */\n        attn_r_pf16b_key_starts(&kv, &ks, ks_end, ks_end - ks);"
      assert.truthy(c:find(further, 1, true))
      assert.is_nil(c:find("key_starts(&kv, &ks, ks_end, kper)", 1, true))
      assert.is_nil(c:find("/* those the score calls left", 1, true))
    end)

    it("the 16-bit pair step, bound by its work, does not; short rows ask for the lines they have", function()
      local _, c = files_for({ name = "r_pf16", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512" },
        dtype = { q = "f32", kv = "f16", o = "f32" } })
      assert.is_nil(c:find("prefetch_key_start(&kv, jp", 1, true))
      _, c = files_for({ name = "r_pf8", heads_q = 2, head_dim = 8, isa = { "avx512" } })
      local _, n = fn_text(c, "void attn_r_pf8_prefetch_key_start("):gsub("__builtin_prefetch%(", "")
      assert.equal(2, n) -- a row of 8 floats is half a line: one line of K, one of V
    end)

    it("a key's first lines are asked for on each page its rows of every kv head span", function()
      -- Gemma-2-9B: rows of 1 KiB, a page every 4 kv heads; Llama-3-8B's 8 rows of 512 bytes fill one
      local _, c = files_for({ name = "r_pg", heads_q = 16, heads_kv = 8, head_dim = 256, isa = { "avx512" } })
      local fn = fn_text(c, "void attn_r_pg_prefetch_key_start(")
      for _, hk in ipairs({ 0, 4 }) do
        assert.truthy(fn:find(("attn_r_pg_k_row(kv, %d, j)"):format(hk), 1, true), hk)
        assert.truthy(fn:find(("attn_r_pg_v_row(kv, %d, j)"):format(hk), 1, true), hk)
      end
      local _, n = fn:gsub("__builtin_prefetch%(", "")
      assert.equal(16, n) -- 4 lines of K and 4 of V for each of the 2 pages
      _, c = files_for({ name = "r_pg1", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512" } })
      fn = fn_text(c, "void attn_r_pg1_prefetch_key_start(")
      _, n = fn:gsub("__builtin_prefetch%(", "")
      assert.equal(8, n)
      assert.is_nil(fn:find("_k_row(kv, 4", 1, true))
    end)

    it("the blocked kernel's score kernels take a line of the next block an iteration (rows of whole lines)", function()
      local _, c = files_for({ name = "r_pk", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2" } })
      -- one vector of rows: the lanes kernel (AVX2), 16 rows a call (every row of the next block), and
      -- the pairs kernel in two vectors (AVX-512), 8 (the scores' half: its P*V calls ask for the
      -- rest); half a vector: 8 rows (half); one line an iteration each
      local kernels = {
        { "lanes_8x1_d128_f32_p16_pf", "avx2", { "pr[d / 8] + d % 8 * 16" } },
        { "dpairs_8x2_d128_f32_pf", "avx512", { "pr[d / 16] + d / 2 % 8 * 16" } },
        { "dpairs_8x1_d128_f32_pf", "avx512", { "pr[d / 16] + d / 2 % 8 * 16" } },
        { "dpairs_8x1_d128_f32_pf", "avx2", { "pr[d / 16] + d / 2 % 8 * 16" } },
      }
      for _, k in ipairs(kernels) do
        local kernel, isa, lines = k[1], k[2], k[3]
        local fn = fn_text(c, ("void attn_%s__%s("):format(kernel, isa))
        assert.truthy(fn:find("int64_t rp, const float *const *pr)", 1, true), kernel)
        assert.truthy(fn:find("if (pr)", 1, true), kernel)
        local _, n = fn:gsub("attn_prefetch_line_l2%(", "")
        assert.equal(#lines, n, kernel) -- in the loop with pr only
        for _, line in ipairs(lines) do
          assert.truthy(fn:find("attn_prefetch_line_l2(" .. line .. ");", 1, true), kernel)
        end
      end
      assert.is_nil(c:find("attn_lanes_8x1_d128_f32_p32_pf__avx512(", 1, true))
      assert.is_nil(c:find("_lanes_8x1_[%w_]*__avx512%("))
      -- the calls: the rows after the last prefetched, where the prefetch goes to L2
      assert.truthy(c:find("if (inside) pl = attn_r_pk_next_rows(&kv, jn, pn, pl, pr, LINE_FLOATS, w->s);", 1, true))
      assert.truthy(c:find("if (inside) pl = attn_r_pk_next_rows(&kv, jn, pn, pl, pr, LINE_FLOATS / 2, w->s);", 1,
        true))
      assert.truthy(c:find("LINE_FLOATS = 16 /* elements of a K/V row in a cache line */", 1, true))
      assert.truthy(c:find("const int inside = pf == ATTN_PREFETCH_L2 && pl < pn;", 1, true))
      -- the P*V kernels of the AVX-512 variant (every row count; 7 and 8 rows in 3 chunks, the rest
      -- in 2) take rows too, a line an iteration of a chunk; AVX2's do not
      for mr = 1, 8 do
        local fn = fn_text(c, ("void attn_pv_%dx128_f32_pf__avx512("):format(mr))
        local nch = mr >= 7 and 3 or 2
        assert.truthy(fn:find("const float *restrict alpha, const float *const *pr)", 1, true), mr)
        local line = "if %(pr%) attn_prefetch_line_l2%(pr%[%(t0 %+ j%) / 8%] %+ %(t0 %+ j%) %% 8 %* 16%);"
        local _, n = fn:gsub(line, "")
        assert.equal(nch, n, mr)
      end
      assert.is_nil(fn_text(c, "void attn_pv_6x128_f32__avx2("):find("pr)", 1, true))
      -- the decode unit hands the P*V calls of one vector of rows and of panels as many rows as
      -- their iterations have lines, the prefill path NULL
      assert.truthy(c:find("const int inside = !pairs && !dots && pf == ATTN_PREFETCH_L2 && pl < pn;", 1, true))
      assert.truthy(c:find("if (inside) pl = attn_r_pk_next_rows(&kv, jn, pn, pl, pr, (int)(((take >= PV_WIDE_ROWS ? "
        .. "PV_WIDE_CHUNKS : PV_NARROW_CHUNKS) * kb + (ROW_LINES - 1)) / ROW_LINES), w->s);", 1, true))
      assert.truthy(c:find("PV_WIDE_ROWS = 7, /* rows a P*V call takes from which its kernel has PV_WIDE_CHUNKS */",
        1, true))
      assert.truthy(c:find("PV_WIDE_CHUNKS = 3, /* chunks of D of the P*V kernels of PV_WIDE_ROWS or more rows */",
        1, true))
      assert.truthy(c:find("PV_NARROW_CHUNKS = 2, /* chunks of D of the P*V kernels of fewer than PV_WIDE_ROWS rows */",
        1, true))
      assert.truthy(c:find("ROW_LINES = 8 /* cache lines of each K and V row", 1, true))
      assert.truthy(c:find("w->alpha + r, inside ? pr : NULL);", 1, true))
      assert.truthy(c:find("w->o + r * PREFILL_DVP, w->alpha + r, NULL);", 1, true))
      assert.truthy(c:find("#define PREFILL_DVP 128 ", 1, true))
    end)

    it("panels of rows ask for the next block inside their products (AVX-512, f32 cache)", function()
      local _, c = files_for({ name = "r_pp", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2" } })
      -- the panel kernel's prefetching instance: a line every other d of the 8-fold unrolled loop,
      -- 64 lines a call, 8 rows (the scores' half of the next block: a quarter of a block's
      -- calls per kv head and panel)
      local fn = fn_text(c, "void attn_qkpf_8x32_d128_f32__avx512(")
      assert.truthy(fn:find("float *restrict c, int64_t cs, const float *const *pr)", 1, true))
      assert.truthy(c:find(" * pr: 8 rows of the next block to prefetch into L2, a line every other d", 1, true))
      local _, n = fn:gsub("attn_prefetch_line_l2%(", "")
      assert.equal(4, n)
      for _, d in ipairs({ "(d)", "(d + 2)", "(d + 4)", "(d + 6)" }) do
        local line = ("attn_prefetch_line_l2(pr[%s / 16] + %s / 2 %% 8 * 16);"):format(d, d)
        assert.truthy(fn:find(line, 1, true), d)
      end
      -- the prefill kernel is as it was, and AVX2 (whose P*V does not prefetch) has no such instance
      assert.is_nil(fn_text(c, "void attn_qk_8x32_d128_f32__avx512("):find("prefetch", 1, true))
      assert.is_nil(c:find("qkpf_8x16_d128_f32__avx2", 1, true))
      -- the calls: the scores' half (to pn / 2), where the prefetch goes to L2; else the plain kernel
      assert.truthy(c:find("                    if (pf == ATTN_PREFETCH_L2 && pl < pn / 2) {\n"
        .. "                        pl = attn_r_pp_next_rows(&kv, jn, pn / 2, pl, pr, QKPF_ROWS, w->s);\n"
        .. "                        attn_qkpf_8x32_d128_f32__avx512(attn_r_pp_k_row(&kv, hk, j0 + c), kv.k_key, "
        .. "qt, w->s + c * rp + r, rp, pr);\n"
        .. "                    } else\n"
        .. "                        attn_qk_8x32_d128_f32__avx512(", 1, true))
      assert.truthy(c:find("QKPF_ROWS = 8,? /%* rows of the next block a call of the prefetching panel kernel"))
      assert.truthy(c:find("const int inside = !pairs && !dots && pf == ATTN_PREFETCH_L2 && pl < pn;", 1, true))
      -- no key starts for panels; the AVX2 variant keeps them
      assert.truthy(c:find("ks_end = pf != ATTN_PREFETCH_L2 || (!lanes && !pairs && !dots) ? ks :", 1, true))
      assert.truthy(c:find("ks_end = pf != ATTN_PREFETCH_L2 ? ks :", 1, true))
    end)

    it("the blocked kernel prefetches between its score kernels for a 16-bit cache, D ~= Dv, short rows", function()
      for _, cfg in ipairs({
        { name = "r_pk16", heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { q = "f32", kv = "f16", o = "f32" } },
        { name = "r_pkdv", heads_q = 32, heads_kv = 8, head_dim = 128, head_dim_v = 64 },
        { name = "r_pk72", heads_q = 32, heads_kv = 8, head_dim = 72 },
        { name = "r_pk64", heads_q = 12, heads_kv = 12, head_dim = 64 }, -- rows of 4 lines (GPT-2)
      }) do
        cfg.isa = { "avx512" }
        local _, c = files_for(cfg)
        assert.is_nil(c:find("next_rows", 1, true), cfg.name)
        assert.is_nil(c:find("prefetch_line_l2", 1, true), cfg.name)
        -- the kernel is there, without the prefetch: lanes from a 16-bit cache, pairs from an f32 one
        assert.truthy(c:find(cfg.dtype and "attn_lanes_8x1_" or "attn_dpairs_8x2_", 1, true), cfg.name)
      end
    end)

    it("the scores from a 16-bit cache widen a vector of each key's values at a time", function()
      local _, c = files_for({ name = "r_w16", heads_q = 32, heads_kv = 8, head_dim = 72, isa = { "avx512" },
        dtype = { q = "f32", kv = "f16", o = "f32" } })
      local fn = fn_text(c, "void attn_lanes_8x1_d72_f16_p32__avx512(")
      assert.is_nil(fn:find("attn_widen_f16__scalar", 1, true)) -- no value widened on its own
      local _, full = fn:gsub("_mm512_storeu_ps%(kw %+ %d+, _mm512_cvtph_ps%(", "")
      local _, part = fn:gsub("_mm512_storeu_ps%(kw %+ %d+, attn_loadn_f16__avx512%(k%d %+ d0, 8%)%)", "")
      assert.equal(8, full) -- 8 keys, a vector each
      assert.equal(8, part) -- and the last 8 of D = 72
      assert.truthy(fn:find("_mm512_set1_ps(kw[112 + d - d0])", 1, true))
      -- the panel kernel (K rows as its A) too, from f16; from bf16 (a shift) each value on its own
      fn = fn_text(c, "void attn_qk_8x32_d72_f16__avx512(")
      assert.is_nil(fn:find("attn_widen_f16__scalar", 1, true))
      _, full = fn:gsub("_mm512_storeu_ps%(aw %+ %d+, _mm512_cvtph_ps%(", "")
      _, part = fn:gsub("_mm512_storeu_ps%(aw %+ %d+, attn_loadn_f16__avx512%(a%d %+ d0, 8%)%)", "")
      assert.equal(8, full)
      assert.equal(8, part)
      assert.truthy(fn:find("_mm512_set1_ps(aw[112 + d - d0])", 1, true))
      _, c = files_for({ name = "r_wb16", heads_q = 32, heads_kv = 8, head_dim = 72, isa = { "avx512" },
        dtype = { q = "f32", kv = "bf16", o = "f32" } })
      fn = fn_text(c, "void attn_qk_8x32_d72_bf16__avx512(")
      assert.is_nil(fn:find("aw[", 1, true))
      assert.truthy(fn:find("attn_widen_bf16__scalar(a7[d])", 1, true))
    end)
  end)

  describe("decode dispatch", function()
    it("gives the streaming kernel the rows a kv head the runtime says, the blocked kernel the rest", function()
      local _, c = files_for({ name = "r_disp", heads_q = 32, heads_kv = 8, head_dim = 128, causal = true,
        isa = { "avx512" } })
      local decode = c:sub((assert(c:find("static attn_status attn_r_disp_decode__avx512(", 1, true))))
      -- the AVX-512 variant of an f32 cache with D even has the half-width pairs
      assert.truthy(decode:find("const int stream = rows <= attn_cpu()->decode_stream_rows[1];", 1, true))
      local a = assert(decode:find("if (stream) switch (rows) {", 1, true))
      local z = assert(decode:find("attn_r_disp_dunit__avx512(args", a, true))
      -- the streaming unit of Lq 1's 4 rows, the only one before the blocked unit
      assert.truthy(decode:sub(a, z):find("case 4:\n +attn_r_disp_sunit_4x1__avx512%(args"))
      local _, units = decode:sub(a, z):gsub("_sunit_", "")
      assert.equal(1, units)
    end)

    it("has no streaming dispatch where the config has no streaming kernel", function()
      local _, c = files_for({ name = "r_disp_w", heads_q = 32, heads_kv = 8, head_dim = 128, causal = true,
        isa = { "avx512" }, weights = true })
      assert.is_nil(c:find("decode_stream_rows", 1, true))
      assert.truthy(c:find("attn_r_disp_w_dunit__avx512(args", 1, true))
    end)
  end)

  describe("decode scores of half a vector of rows a kv head", function()
    it("pair K values with two values of D a row where the cache is f32 and D is even", function()
      local _, c = files_for({ name = "r_dp", heads_q = 32, heads_kv = 8, head_dim = 128,
        isa = { "avx512", "avx2", "neon" } })
      -- the class's range in the schedule's constants, which each variant's unit declares
      local ranges = { avx512 = "hpairs || (gl > ROWS_QUARTER && gl <= ROWS_HALF)",
        avx2 = "gl > ROWS_QUARTER && gl <= ROWS_HALF", neon = "gl > ROWS_QUARTER && gl <= ROWS_HALF" }
      local halves = { avx512 = { 4, 8 }, avx2 = { 2, 4 }, neon = { 1, 2 } }
      for isa, range in pairs(ranges) do
        local a = assert(c:find("static void attn_r_dp_dunit__" .. isa .. "(", 1, true), isa)
        local unit = c:sub(a, (c:find("\n}\n", a, true)))
        assert.truthy(unit:find("const int pairs = " .. range .. ";", 1, true), isa)
        assert.truthy(unit:find(("ROWS_HALF = %d,"):format(halves[isa][2]), 1, true), isa)
        assert.truthy(unit:find(("ROWS_QUARTER = %d,"):format(halves[isa][1]), 1, true), isa)
        assert.truthy(c:find("static void attn_dpairs_8x1_d128_f32_pf__" .. isa .. "(", 1, true), isa)
      end
      -- every FMA of the kernel takes one broadcast pair; the sums end it, two keys a call
      local a = c:find("static void attn_dpairs_8x1_d128_f32_pf__avx512(", 1, true)
      local fn = c:sub(a, c:find("\n}\n", a, true))
      local _, fmas = fn:gsub("_mm512_fmadd_ps%(attn_set2__avx512%(k%d %+ d%), q, a%d%)", "")
      local _, sums = fn:gsub("attn_sum_pairs__avx512%(", "")
      assert.equal(2 * 8, fmas) -- 8 in each of its loops: with the prefetch inside and without
      assert.equal(4, sums)
    end)

    it("and of one vector in two vectors of pairs on AVX-512 only, each broadcast pair feeding two FMAs", function()
      local _, c = files_for({ name = "r_wp", heads_q = 32, heads_kv = 8, head_dim = 128,
        isa = { "avx512", "avx2", "neon" } })
      local a = assert(c:find("static void attn_dpairs_8x2_d128_f32_pf__avx512(", 1, true))
      local fn = c:sub(a, (c:find("\n}\n", a, true)))
      local _, bcasts = fn:gsub("const __m512 kb = attn_set2__avx512%(k%d %+ d%);", "")
      local _, fmas = fn:gsub("_mm512_fmadd_ps%(kb, q[01], a%d+%)", "")
      local _, sums = fn:gsub("attn_sum_pairs__avx512%(a%d+, a%d+, s %+ %d %* rp, s %+ %d %* rp %+ 8%)", "")
      assert.equal(2 * 8, bcasts) -- 8 keys in each of its loops
      assert.equal(2 * 16, fmas)
      assert.equal(8, sums) -- one key a sum: rows 0-7, then 8-15
      assert.truthy(fn:find("q0 = _mm512_loadu_ps(qp + d * 16 + 0), q1 = _mm512_loadu_ps(qp + d * 16 + 16);", 1, true))
      -- its rows' Q packed in pairs; the lanes kernel where the other ISAs score one vector
      assert.truthy(c:find("if (pairs || lanes) { /* Q of a kv head's rows in pairs of D", 1, true))
      assert.is_nil(c:find("attn_lanes_8x1_[%w_]*__avx512%("))
      assert.truthy(c:find("attn_lanes_8x1_d128_f32_p16_pf__avx2(", 1, true))
      assert.truthy(c:find("attn_lanes_8x1_d128_f32_p8_pf__neon(", 1, true))
      assert.is_nil(c:find("attn_dpairs_8x2_[%w_]*__avx2%("))
    end)

    it("of a quarter vector on AVX-512 run on half-width vectors where the runtime says so", function()
      local _, c = files_for({ name = "r_hp", heads_q = 32, heads_kv = 8, head_dim = 128, isa = { "avx512", "avx2" } })
      assert.truthy(c:find("const int hpairs = gl <= ROWS_QUARTER && attn_cpu()->decode_half_pairs;", 1, true))
      assert.truthy(c:find("pairs ? (hpairs ? ROWS_QUARTER : ROWS_HALF) :", 1, true))
      assert.truthy(c:find("ROWS_QUARTER = 4, /* a quarter vector", 1, true))
      -- Q packed in pairs of D, a kv head's padded rows wide
      assert.truthy(c:find("(d / 2) * 2 * glp + 2 * rr + d % 2] = qw[d];", 1, true))
      -- 256-bit FMAs on one broadcast pair each, Q 4 rows of pairs (8 floats) a step
      local a = assert(c:find("static void attn_hpairs_8x1_d128_f32_pf__avx512(", 1, true))
      local fn = c:sub(a, (c:find("\n}\n", a, true)))
      local _, fmas = fn:gsub("_mm256_fmadd_ps%(attn_set2_half__avx512%(k%d %+ d%), q, a%d%)", "")
      assert.equal(2 * 8, fmas)
      assert.truthy(fn:find("_mm256_loadu_ps(qp + d * 4)", 1, true))
      local _, sums = fn:gsub("attn_sum_pairs_half__avx512%(", "")
      assert.equal(4, sums)
      -- its helpers under the variant's target; the AVX2 variant has none of it
      assert.truthy(c:find('target("avx512f,fma"))) static inline __m256 attn_set2_half__avx512(', 1, true))
      assert.is_nil(c:find("hpairs__avx2", 1, true))
      assert.is_nil(c:find("half__avx2", 1, true))
    end)

    it("keep the dot products for a 16-bit cache and for an odd D", function()
      for _, cfg in ipairs({
        { name = "r_dp16", heads_q = 32, heads_kv = 8, head_dim = 128, dtype = { q = "f32", kv = "f16", o = "f32" } },
        { name = "r_dp_odd", heads_q = 32, heads_kv = 8, head_dim = 127 },
      }) do
        cfg.isa = { "avx512" }
        local _, c = files_for(cfg)
        assert.truthy(c:find("const int pairs = 0;", 1, true), cfg.name)
        assert.is_nil(c:find("_dpairs_", 1, true), cfg.name)
        assert.is_nil(c:find("attn_set2__", 1, true), cfg.name)
        assert.is_nil(c:find("attn_set2_half__", 1, true), cfg.name)
        assert.is_nil(c:find("hpairs", 1, true), cfg.name)
      end
    end)
  end)

  describe("golden files", function()
    local update = os.getenv("ATTNGEN_UPDATE_GOLDEN") == "1"

    for _, name in ipairs(GOLDEN) do
      it(name .. ".h matches tests/golden/" .. name .. ".h", function()
        local h = render_test_config(name)
        local p = GOLDEN_DIR .. "/" .. name .. ".h"
        if update then
          require("pl.dir").makepath(GOLDEN_DIR)
          helper.write_file(p, h)
        end
        local want = helper.read_file(p)
        assert.is_not_nil(want, "missing " .. p .. ": run ATTNGEN_UPDATE_GOLDEN=1 busted tests/spec/render_spec.lua")
        if want ~= h then
          -- the first line that differs, to make the failure readable
          local a, b = helper.lines(want), helper.lines(h)
          local i = 1
          while a[i] == b[i] and i <= math.max(#a, #b) do i = i + 1 end
          error(("%s differs from the rendered header at line %d:\n  golden:   %s\n  rendered: %s\n"
            .. "If the change is intended (a template or banner change), refresh the golden files with\n"
            .. "  ATTNGEN_UPDATE_GOLDEN=1 busted tests/spec/render_spec.lua\n"
            .. "and review the diff (git diff tests/golden) before committing it.")
            :format(p, i, tostring(a[i]), tostring(b[i])), 0)
        end
      end)
    end
  end)
end)
