-- attngen tune: candidate enumeration, canonical descriptors, the tuning
-- file (merges under a lock, concurrent writers), tile = "auto" in
-- generated headers, and the command end to end.  The end-to-end runs
-- compile C and are tagged #slow.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local schema = require("schema")
local planner = require("planner")
local isa_registry = require("isa")
local tune = require("tune")
local tunedb = require("tunedb")
local json = require("dkjson")

local EXIT_USAGE = 2

local function cfg_of(raw)
  local base = { name = "tt", heads_q = 4, heads_kv = 2, head_dim = 64, causal = true }
  for k, v in pairs(raw or {}) do base[k] = v end
  return assert(schema.normalize(base))
end

--- The interpreter running this spec, for Lua subprocesses.
local function lua_cmd()
  local i = -1
  while arg and arg[i - 1] do i = i - 1 end
  local interp = arg and arg[i]
  if interp and not interp:find("busted", 1, true) then return interp end
  local _, out = helper.sh("command -v luajit lua5.4 lua5.1 | head -n 1")
  return (out:gsub("%s+$", ""))
end

describe("tune", function()
  local tmp

  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  local nfolders = 0
  local function folder(name)
    nfolders = nfolders + 1
    local d = ("%s/%s%d"):format(tmp, name or "d", nfolders)
    assert(require("pl.dir").makepath(d))
    return d
  end

  --- Expects a usage error: exit 2, one line on stderr with each substring.
  local function fails(args, env, ...)
    local code, out, err = helper.attngen(args, { env = env })
    assert.equal(EXIT_USAGE, code, ("exit code (stdout: %s, stderr: %s)"):format(out, err))
    assert.equal("attngen: ", err:sub(1, 9), err)
    assert.equal(1, #helper.lines(err), "not one line: " .. err)
    for _, s in ipairs({ ... }) do
      assert.truthy(err:find(s, 1, true), ("expected '%s' in: %s"):format(s, err))
    end
    return err
  end

  describe("candidates", function()
    local configs = {
      cfg_of(),
      cfg_of({ head_dim = 128, heads_q = 32, heads_kv = 8 }),
      cfg_of({ head_dim = 17, head_dim_v = 40, causal = false, padding = true }),
      cfg_of({ head_dim = 512, decode_max_q = 0 }),
    }

    it("respect the planner's constraints and the register blocking, on every ISA", function()
      for _, isa_name in ipairs(isa_registry.order) do
        local isa = assert(isa_registry.get(isa_name))
        local qstep, kvstep = tune.steps(isa_name)
        assert.equal(0, kvstep % 16)
        assert.equal(0, kvstep % (isa.qk_block.nr * isa.lanes))
        assert.equal(0, qstep % isa.qk_block.mr)
        assert.equal(0, qstep % isa.pv_block.mr)
        for _, cfg in ipairs(configs) do
          for _, exhaustive in ipairs({ false, true }) do
            local cands = tune.candidates(cfg, isa_name, { exhaustive = exhaustive })
            assert.is_true(#cands.prefill > 0)
            local heur = 0
            for _, t in ipairs(cands.prefill) do
              local where = ("%s %s q=%d kv=%d"):format(isa_name, cfg.head_dim, t.q, t.kv)
              assert.is_true(t.q >= 1 and t.q <= 1024, where)
              assert.is_true(t.kv >= 16 and t.kv <= 4096 and t.kv % 16 == 0, where)
              if t.heuristic then
                heur = heur + 1
                assert.same(planner.default_tile(cfg), { q = t.q, kv = t.kv })
              else
                assert.equal(0, t.q % qstep, where)
                assert.equal(0, t.kv % kvstep, where)
              end
              -- the schema takes the tile, and the planner keeps the ISA's full blocking
              -- (an ISA for one product type, avx512bf16, with that type and its storage)
              local c = cfg_of({ head_dim = cfg.head_dim, head_dim_v = cfg.head_dim_v, isa = { isa_name },
                tile = { q = t.q, kv = t.kv }, matmul = isa.matmul, dtype = isa.matmul })
              local v = planner.plan(c).variants[1]
              assert.equal(isa.qk_block.nr, v.qk.nr, where)
              assert.equal(0, t.kv % v.qk.nc, where)
            end
            assert.equal(1, heur, "the heuristic default is a candidate exactly once")
            if cfg.decode_max_q == 0 then
              assert.same({}, cands.decode)
            else
              local dh = 0
              for _, d in ipairs(cands.decode) do
                assert.is_true(d.block >= 1 and d.block <= d.chunk)
                if d.heuristic then
                  dh = dh + 1
                  local sdpa = planner.family("sdpa")
                  assert.same({ sdpa.default_decode_block(cfg), sdpa.DECODE_CHUNK }, { d.block, d.chunk })
                  -- the block the plan takes without a tuned one
                  assert.equal(planner.plan(cfg).decode.block, d.block)
                end
              end
              assert.equal(1, dh)
            end
          end
        end
      end
    end)

    it("the pruned grid keeps tiles whose working set fits the L2 cache, and is a subset of the full grid", function()
      local cfg = cfg_of({ head_dim = 128 })
      for _, l2 in ipairs({ 256 * 1024, 1024 * 1024, 4096 * 1024 }) do
        local caches = { l1 = 48 * 1024, l2 = l2 }
        local pruned = tune.candidates(cfg, "avx512", { caches = caches })
        local full = tune.candidates(cfg, "avx512", { exhaustive = true, caches = caches })
        local in_full = {}
        for _, t in ipairs(full.prefill) do in_full[t.q .. "x" .. t.kv] = true end
        for _, t in ipairs(pruned.prefill) do
          assert.is_true(in_full[t.q .. "x" .. t.kv], t.q .. "x" .. t.kv)
          if not t.heuristic then
            assert.is_true(tune.working_set(cfg, "avx512", t) <= l2, t.q .. "x" .. t.kv)
          end
        end
        assert.is_true(#pruned.prefill < #full.prefill)
      end
      local small = tune.candidates(cfg, "avx512", { caches = { l1 = 32768, l2 = 256 * 1024 } })
      local big = tune.candidates(cfg, "avx512", { caches = { l1 = 32768, l2 = 4096 * 1024 } })
      assert.is_true(#small.prefill < #big.prefill)
    end)

    it("the heuristic decode block is the plan's: Llama-3-8B takes 16 keys (f32), 32 (f16)", function()
      local sdpa = planner.family("sdpa")
      for _, c in ipairs({ { "f32", 16 }, { "f16", 32 } }) do
        local cfg = cfg_of({ heads_q = 32, heads_kv = 8, head_dim = 128, dtype = c[1] })
        assert.equal(c[2], sdpa.default_decode_block(cfg))
        assert.equal(c[2], planner.plan(cfg).decode.block)
        local marked = {}
        for _, d in ipairs(tune.candidates(cfg, "avx2").decode) do
          if d.heuristic then marked[#marked + 1] = d.block end
        end
        assert.same({ c[2] }, marked)
      end
    end)

    it("--tiles and --blocks give exactly those candidates plus the heuristic default", function()
      local h = planner.default_tile(cfg_of())
      local cands = tune.candidates(cfg_of(), "avx512", { tiles = { { q = 48, kv = 64 }, { q = h.q, kv = h.kv } },
        blocks = { 32 } })
      assert.equal(2, #cands.prefill)
      assert.same({ 48, 64 }, { cands.prefill[1].q, cands.prefill[1].kv })
      assert.is_true(cands.prefill[2].heuristic)
      assert.equal(2, #cands.decode)
      assert.same({ 32, planner.family("sdpa").DECODE_CHUNK }, { cands.decode[1].block, cands.decode[1].chunk })
      assert.is_true(cands.decode[2].heuristic)
    end)

    it("linear attention: its own grid of chunks and key blocks, prefill only, every candidate a valid plan", function()
      local lin = assert(schema.normalize({ name = "tl", kind = "linear", heads_q = 4, head_dim = 32, causal = true,
        state = true }))
      local default = planner.family("linear").default_tile(lin)
      assert.same(planner.family("linear").DEFAULT_TILE_CAUSAL, default)
      local cands = tune.candidates(lin, "avx2", { caches = { l1 = 1024, l2 = 1024, l3 = 1024 } }) -- no pruning
      local grid = require("families").get("linear").tune.grid
      assert.equal(#grid.qs * #grid.kvs, #cands.prefill)
      assert.same({}, cands.decode)
      local heur = 0
      for _, t in ipairs(cands.prefill) do
        if t.heuristic then
          heur = heur + 1
          assert.same({ default.q, default.kv }, { t.q, t.kv })
        end
      end
      assert.equal(1, heur)
      local full = tune.candidates(lin, "avx512", { exhaustive = true })
      assert.equal((grid.exhaustive.q_max / grid.exhaustive.q_step) * #grid.exhaustive.kvs, #full.prefill)
      for _, isa_name in ipairs({ "avx512", "avx2", "neon", "scalar" }) do
        local files, list = tune.sources(lin, isa_name, { prefill = { { q = 16, kv = 64 }, { q = 128, kv = 256 } } })
        assert.equal(2, #list)
        assert.equal(5, #files) -- .h and .c of each, and the table
        assert.truthy(files[2].text:find("TQ = 16,", 1, true))
      end
    end)

    it("decode candidates are timed at the fewest query rows that take the blocked decode kernel", function()
      -- Llama-3-8B's shape: 4 query heads per kv head, so the streaming kernel serves Lq = 1 only
      local llama = cfg_of({ heads_q = 32, heads_kv = 8, head_dim = 128 })
      local rows, why = tune.decode_rows(llama, "avx512")
      assert.equal(2, rows)
      assert.truthy(why:find("Lq = 2", 1, true), why)
      assert.equal(2, (tune.decode_rows(llama, "avx2")))
      assert.equal(3, (tune.decode_rows(cfg_of(), "avx512"))) -- 2 per kv head: streaming up to Lq = 2
      assert.equal(1, (tune.decode_rows(llama, "scalar"))) -- no streaming kernel
      assert.equal(1, (tune.decode_rows(cfg_of({ heads_q = 8, heads_kv = 1 }), "avx512"))) -- group of 8
      local rows1, why1 = tune.decode_rows(cfg_of({ decode_max_q = 2 }), "avx512") -- streaming takes all
      assert.equal(1, rows1)
      assert.is_nil(why1)
      local argv = tune.driver_args({ isa = "avx512", threads = 1, seqs = {}, decode_seq = 4096, decode_q = 2,
        decode = true, exhaustive = true })
      assert.equal("decode:2:4096", argv[#argv])
    end)

    it("candidate sources: one ISA, renamed, and a table naming every kernel", function()
      local cfg = cfg_of({ name = "src" })
      local cands = tune.candidates(cfg, "avx2", { tiles = { { q = 8, kv = 32 } }, blocks = { 16 } })
      local files, list = tune.sources(cfg, "avx2", cands)
      assert.equal(4, #list)
      assert.equal(2 * #list + 1, #files)
      local tbl = files[#files]
      assert.equal("attn_tune_table.c", tbl.name)
      assert.truthy(tbl.text:find("const int attn_tune_count = 4;", 1, true))
      local h = planner.default_tile(cfg)
      for _, name in ipairs({ "src_q8k32", ("src_q%dk%d"):format(h.q, h.kv), "src_b16c512", "src_b64c512" }) do
        assert.truthy(tbl.text:find("&attn_" .. name .. "_kernel", 1, true), name)
      end
      for _, f in ipairs(files) do
        if f.name:match("%.c$") and f.name ~= "attn_tune_table.c" then
          assert.truthy(f.text:find("__avx2", 1, true), f.name)
          assert.falsy(f.text:find("__avx512", 1, true), f.name)
        end
      end
      -- prefill candidates leave out the decode path, decode candidates keep it
      local text = {}
      for _, f in ipairs(files) do text[f.name] = f.text end
      assert.falsy(text["src_q8k32.c"]:find("_decode__avx2", 1, true))
      assert.truthy(text["src_b16c512.c"]:find("_decode__avx2", 1, true))
      assert.truthy(text["src_b16c512.h"]:find("Decode: blocks of 16 keys in splits of 512", 1, true))
    end)
  end)

  describe("descriptors", function()
    local cpu, isa = "Some CPU [family 1 model 2]", "avx512"

    it("do not depend on key order, the tile, the name or the ISA list", function()
      local a = cfg_of({ tile = { q = 48, kv = 64 } })
      local b = cfg_of({ name = "other", isa = { "avx512", "scalar" } })
      -- the same table built in the opposite key order
      local keys = {}
      for k in pairs(a) do keys[#keys + 1] = k end
      table.sort(keys, function(x, y) return x > y end)
      local c = {}
      for _, k in ipairs(keys) do c[k] = a[k] end
      local d = tunedb.descriptor(a, "prefill", isa, cpu)
      assert.equal(d, tunedb.descriptor(b, "prefill", isa, cpu))
      assert.equal(d, tunedb.descriptor(c, "prefill", isa, cpu))
      assert.falsy(d:find("tile", 1, true))
      assert.falsy(d:find("name", 1, true))
      assert.truthy(d:find(cpu, 1, true))
    end)

    it("differ by bucket, ISA, CPU and every config key that shapes the kernel", function()
      local base = cfg_of()
      local d = tunedb.descriptor(base, "prefill", isa, cpu)
      assert.not_equal(d, tunedb.descriptor(base, "decode", isa, cpu))
      assert.not_equal(d, tunedb.descriptor(base, "prefill", "avx2", cpu))
      assert.not_equal(d, tunedb.descriptor(base, "prefill", isa, "Other CPU"))
      for _, change in ipairs({ { head_dim = 65 }, { heads_q = 8 }, { causal = false }, { padding = true },
        { window = { left = 8, right = 0 } }, { softcap = 30 }, { mask = "bool" }, { decode_max_q = 4 } }) do
        local k = next(change)
        assert.not_equal(d, tunedb.descriptor(cfg_of(change), "prefill", isa, cpu), k)
      end
    end)
  end)

  describe("tuning file", function()
    local cpu = tunedb.host().cpu

    it("encodes deterministically with sorted keys and decodes back", function()
      local db = tunedb.empty()
      db.entries["b"] = tunedb.entry({ tile = { q = 48, kv = 64 }, gflops = 12.5 })
      db.entries["a"] = tunedb.entry({ tile = { block = 32, chunk = 512 }, gflops = 3 })
      local text = tunedb.encode(db)
      assert.equal(text, tunedb.encode(assert(tunedb.decode(text, "x"))))
      assert.truthy(text:find('"a":.*"b":'), text)
      assert.truthy(text:find('"block":32,%s*"chunk":512'), "keys are sorted: " .. text)
      local back = assert(tunedb.decode(text, "x"))
      assert.same({ q = 48, kv = 64 }, back.entries.b.tile)
      assert.equal('{\n  "entries":{\n  },\n  "version":1\n}\n', tunedb.encode(tunedb.empty()))
    end)

    it("refuses files that are not tuning files, and leaves them alone", function()
      local d = folder("bad")
      for _, text in ipairs({ "{ not json", "[1, 2]", '{"version": 2, "entries": {}}', '{"version": 1}' }) do
        local f = helper.write_file(d .. "/tune.json", text)
        local db, err = tunedb.load(f)
        assert.is_nil(db)
        assert.truthy(err:find(f, 1, true), err)
        assert.equal(1, #helper.lines(err), err)
        local ok, merr = tunedb.merge(f, { x = tunedb.entry({ tile = { q = 1, kv = 16 } }) })
        assert.is_nil(ok)
        assert.truthy(merr:find(f, 1, true), merr)
        assert.equal(text, helper.read_file(f))
        assert.falsy(helper.exists(f .. ".lock"))
      end
    end)

    it("merges keep other entries and replace equal descriptors", function()
      local f = folder("merge") .. "/sub/tune.json" -- the folder is created
      assert.is_true(tunedb.merge(f, { one = tunedb.entry({ tile = { q = 48, kv = 64 }, gflops = 1 }) }))
      assert.is_true(tunedb.merge(f, { two = tunedb.entry({ tile = { q = 96, kv = 64 }, gflops = 2 }) }))
      assert.is_true(tunedb.merge(f, { one = tunedb.entry({ tile = { q = 24, kv = 32 }, gflops = 3 }) }))
      local db = assert(tunedb.load(f))
      assert.same({ q = 24, kv = 32 }, db.entries.one.tile)
      assert.same({ q = 96, kv = 64 }, db.entries.two.tile)
      assert.falsy(helper.exists(f .. ".lock"))
    end)

    it("concurrent writers lose nothing (8 processes merging into one file)", function()
      local d = folder("conc")
      local f = d .. "/tune.json"
      local script = helper.write_file(d .. "/merge.lua", ([==[
package.path = %q .. "/generator/?.lua;" .. %q .. "/generator/?/init.lua;" .. package.path
local tunedb = require("tunedb")
local ok, err = tunedb.merge(arg[1], { [arg[2]] = tunedb.entry({ tile = { q = tonumber(arg[3]), kv = 64 } }) })
if not ok then io.stderr:write(err, "\n") os.exit(1) end
]==]):format(helper.root, helper.root))
      local lua = lua_cmd()
      local jobs = {}
      for i = 1, 8 do
        -- each writer's failure reaches the group's stderr, which the test reads
        jobs[#jobs + 1] = ("{ %s %s %s e%d %d || echo \"writer e%d failed\" >&2; } & "):format(helper.quote(lua),
          helper.quote(script), helper.quote(f), i, i, i)
      end
      local code, _, err = helper.sh("{ " .. table.concat(jobs) .. "wait; }")
      assert.equal(0, code, err)
      assert.equal("", err)
      local db = assert(tunedb.load(f))
      for i = 1, 8 do
        assert.is_table(db.entries["e" .. i], "entry e" .. i .. " lost")
        assert.equal(i, db.entries["e" .. i].tile.q)
      end
      assert.falsy(helper.exists(f .. ".lock"))
    end)

    it("a stale lock left by a killed process is taken over", function()
      local f = folder("stale") .. "/tune.json"
      assert(require("lfs").mkdir(f .. ".lock"))
      assert(require("lfs").touch(f .. ".lock", os.time() - 2 * tunedb.LOCK_STALE))
      assert.is_true(tunedb.merge(f, { x = tunedb.entry({ tile = { q = 48, kv = 64 } }) }))
      assert.falsy(helper.exists(f .. ".lock"))
    end)

    it("plan options: the entries for this CPU and ISA, only for tile = \"auto\"", function()
      local f = folder("opts") .. "/tune.json"
      local cfg = cfg_of()
      local isa = assert(tunedb.best_isa(cfg))
      assert.same({}, tunedb.plan_options(cfg, f)) -- no file yet
      assert.is_true(tunedb.merge(f, {
        [tunedb.descriptor(cfg, "prefill", isa, cpu)] = tunedb.entry({ tile = { q = 48, kv = 64 }, gflops = 12.34,
          cpu = cpu }),
        [tunedb.descriptor(cfg, "decode", isa, cpu)] = tunedb.entry({ tile = { block = 32, chunk = 1024 },
          gflops = 5, cpu = cpu }),
        [tunedb.descriptor(cfg_of({ head_dim = 32 }), "prefill", isa, cpu)] = tunedb.entry({
          tile = { q = 24, kv = 32 }, gflops = 1, cpu = cpu }),
      }))
      local opts = assert(tunedb.plan_options(cfg, f))
      assert.same({ q = 48, kv = 64 }, opts.tile)
      assert.equal(("tuned on %s (%s, 12.3 GFLOP/s)"):format(cpu, tunedb.display_path(f)), opts.tile_reason)
      assert.equal(32, opts.decode_block)
      assert.equal(1024, opts.decode_chunk)
      local plan = planner.plan(cfg, opts)
      assert.same({ q = 48, kv = 64 }, plan.tile)
      assert.same({ 32, 1024 }, { plan.decode.block, plan.decode.chunk })
      -- a fixed tile, another CPU's entries, another shape: nothing
      assert.same({}, tunedb.plan_options(cfg_of({ tile = { q = 8, kv = 16 } }), f))
      assert.same({}, tunedb.plan_options(cfg_of({ head_dim = 48 }), f))
      assert.same({ q = 24, kv = 32 }, tunedb.plan_options(cfg_of({ head_dim = 32 }), f).tile)
      -- without a decode path the decode entry does not apply
      assert.is_nil(tunedb.plan_options(cfg_of({ decode_max_q = 0 }), f).decode_block)
    end)
  end)

  describe("command", function()
    local cpu = tunedb.host().cpu
    local cfgsrc = 'return { name = "%s", heads_q = 2, head_dim = 16, causal = true }\n'

    --- A config file and a tuning file with a result for it on this machine.
    local function tuned_setup(name)
      local d = folder("cmd")
      local file = helper.config_file(d, name, cfgsrc:format(name))
      local cfg = assert(require("config").load(file, {}))
      local isa = assert(tunedb.best_isa(cfg))
      local db = d .. "/tune.json"
      assert.is_true(tunedb.merge(db, {
        [tunedb.descriptor(cfg, "prefill", isa, cpu)] = tunedb.entry({ tile = { q = 48, kv = 64 }, gflops = 21.5,
          cpu = cpu }),
        [tunedb.descriptor(cfg, "decode", isa, cpu)] = tunedb.entry({ tile = { block = 32, chunk = 512 },
          gflops = 4.31, cpu = cpu }),
      }))
      return d, file, db, cfg
    end

    it("a config with bf16 products tunes: its tiles' outputs agree within that path's tolerance #slow", function()
      local d = folder("bf16")
      local file = helper.config_file(d, "tb",
        'return { name = "tb", heads_q = 2, head_dim = 64, causal = true, dtype = "bf16", matmul = "bf16" }\n')
      local db = d .. "/tune.json"
      local code, out, err = helper.attngen({ "tune", file, "--seq", "256", "--only", "prefill",
        "--tiles", "48x64,96x128", "--db", db })
      assert.equal(0, code, err)
      assert.falsy((out .. err):find("FAILED", 1, true), out .. err)
      assert.truthy(helper.read_file(db):find('"gflops"', 1, true)) -- a result was recorded
    end)

    it("a config with a RoPE table tunes: the tuner passes a table of every position, both buckets #slow", function()
      local d = folder("ropetab")
      local file = helper.config_file(d, "tr", 'return { name = "tr", heads_q = 2, head_dim = 32, causal = true, '
        .. 'rope = { style = "neox", table = true } }\n')
      local db = d .. "/tune.json"
      local code, out, err = helper.attngen({ "tune", file, "--seq", "96", "--decode-seq", "300",
        "--tiles", "16x32", "--blocks", "16", "--db", db })
      assert.equal(0, code, err)
      assert.falsy((out .. err):find("FAILED", 1, true), out .. err)
      local entries = assert(json.decode(helper.read_file(db))).entries
      local buckets = {}
      for _, e in pairs(entries) do buckets[e.bucket] = true end
      assert.same({ prefill = true, decode = true }, buckets)
    end)

    it("a causal linear config with a state tunes: every chunk's output agrees, from a zero state #slow", function()
      local d = folder("lin")
      local file = helper.config_file(d, "tl",
        'return { name = "tl", kind = "linear", heads_q = 2, head_dim = 32, causal = true, state = true }\n')
      local db = d .. "/tune.json"
      local code, out, err = helper.attngen({ "tune", file, "--seq", "200", "--tiles", "16x64,64x128", "--db", db })
      assert.equal(0, code, err)
      assert.falsy((out .. err):find("FAILED", 1, true), out .. err)
      assert.truthy(out:find("token-at-a-time recurrence", 1, true), out)
      local entries = assert(json.decode(helper.read_file(db))).entries
      local n = 0
      for _, e in pairs(entries) do
        n = n + 1
        assert.equal("prefill", e.bucket)
        assert.equal(3, e.candidates) -- the two tiles and the heuristic
      end
      assert.equal(1, n)
    end)

    it("tile = \"auto\" takes the tuning file's tile and the header says so", function()
      local d, file, db = tuned_setup("ta")
      local out = d .. "/gen"
      local code, _, err = helper.attngen({ "generate", "-q", file, "-o", out }, { env = { ATTNGEN_TUNE_DB = db } })
      assert.equal(0, code, err)
      local h = helper.read_file(out .. "/ta.h")
      local want = (" * Tiles: 48 query rows x 64 keys (tuned on %s (%s, 21.5 GFLOP/s)).\n"):format(cpu, db)
      assert.truthy(h:find(want, 1, true), h)
      assert.truthy(h:find((" * Decode: blocks of 32 keys in splits of 512 (tuned on %s (%s, 4.3 GFLOP/s)).\n")
        :format(cpu, db), 1, true), h)
      local c = helper.read_file(out .. "/ta.c")
      assert.truthy(c:find("TQ = 48 query rows x TK = 64 keys", 1, true))
      assert.truthy(c:find(" * Tile: q = 48, kv = 64 (tuned on ", 1, true))
      -- the default file is tune.json in the cache
      local cache = folder("cache")
      os.rename(db, cache .. "/tune.json")
      code, _, err = helper.attngen({ "generate", "-q", file, "-o", out }, { env = { ATTNGEN_CACHE = cache } })
      assert.equal(0, code, err)
      assert.truthy(helper.read_file(out .. "/ta.h"):find("48 query rows x 64 keys (tuned on ", 1, true))
    end)

    it("without a tuning result, or with ATTNGEN_TUNE_DB=none, the heuristic default", function()
      local d, file, db, cfg = tuned_setup("tb")
      local t = planner.default_tile(cfg)
      local heuristic = (" * Tiles: %d query rows x %d keys (heuristic default (tile = \"auto\", no tuning result)).\n")
        :format(t.q, t.kv)
      for i, env in ipairs({ { ATTNGEN_TUNE_DB = "none" }, { ATTNGEN_TUNE_DB = d .. "/missing.json" },
        { ATTNGEN_CACHE = folder("empty") } }) do
        local out = ("%s/gen%d"):format(d, i)
        local code, _, err = helper.attngen({ "generate", "-q", file, "-o", out }, { env = env })
        assert.equal(0, code, err)
        local h = helper.read_file(out .. "/tb.h")
        assert.truthy(h:find(heuristic, 1, true), h)
        assert.falsy(h:find("Decode:", 1, true), h)
      end
      -- a fixed tile ignores the file
      local out = d .. "/fixed"
      local code, _, err = helper.attngen({ "generate", "-q", file, "--set", "tile={q=8,kv=16}", "-o", out },
        { env = { ATTNGEN_TUNE_DB = db } })
      assert.equal(0, code, err)
      assert.truthy(helper.read_file(out .. "/tb.h"):find("8 query rows x 16 keys (set in the config)", 1, true))
    end)

    it("a broken tuning file is one error line, and nothing is written", function()
      local d, file = tuned_setup("tc")
      local bad = helper.write_file(d .. "/bad.json", "{ oops")
      fails({ "generate", "-q", file, "-o", d .. "/out" }, { ATTNGEN_TUNE_DB = bad }, bad, "ATTNGEN_TUNE_DB=none")
      assert.falsy(helper.exists(d .. "/out/tc.h"))
    end)

    it("usage errors: one line, exit 2, before any compiling", function()
      local d = folder("usage")
      local file = helper.config_file(d, "tu", cfgsrc:format("tu"))
      local notdir = helper.write_file(d .. "/afile", "x")
      local env = { ATTNGEN_CACHE = d .. "/cache" }
      fails({ "tune", file, "--db", notdir .. "/sub/tune.json" }, env, "cannot write the tuning file",
        notdir .. "/sub/tune.json")
      fails({ "tune", file, "--seq", "8" }, env, "decode path")
      fails({ "tune", file, "--seq", "64,x" }, env, "'x'")
      fails({ "tune", file, "--tiles", "48x60" }, env, "'48x60'")
      fails({ "tune", file, "--blocks", "0" }, env, "'0'")
      -- an ISA of the config that this CPU cannot run (neon, or the x86 ones)
      for _, name in ipairs(assert(require("config").load(file, {})).isa) do
        if not tunedb.host().isas[name] then
          fails({ "tune", file, "--isa", name }, env, "--isa " .. name .. ": this CPU cannot run it")
          break
        end
      end
      fails({ "tune", file, "--set", "isa={\"scalar\"}", "--isa", "avx2" }, env, "not one of the config's ISAs")
      fails({ "tune", file, "--set", "decode_max_q=0", "--only", "decode" }, env, "no decode path")
      fails({ "tune", "linear_transformer", "--only", "decode" }, env, "linear attention, which has no decode path")
      fails({ "tune", "linear_transformer", "--blocks", "16" }, env,
        "--blocks: linear_transformer is linear attention, which has no decode path")
      fails({ "tune", file, "--plot", notdir .. "/x/p.svg", "--db", d .. "/t.json" }, env, "cannot write the plot")
      assert.falsy(helper.exists(d .. "/cache"))
      assert.falsy(helper.exists(d .. "/t.json"))
      -- a compiler that fails, or "succeeds" without writing the program
      local quick = { "tune", file, "--tiles", "48x64", "--only", "prefill", "--db", d .. "/t.json" }
      fails(quick, { ATTNGEN_CACHE = d .. "/cache", CC = "false" }, "C compiler 'false'")
      fails(quick, { ATTNGEN_CACHE = d .. "/cache", CC = "true" }, "compiling the tuning candidates of tu",
        "no program")
      assert.falsy(helper.exists(d .. "/t.json"))
      -- --list compiles nothing either
      local code, out = helper.attngen({ "tune", file, "--list" }, { env = env })
      assert.equal(0, code)
      local h = planner.default_tile(require("config").load(file, {}))
      assert.truthy(out:find(("q%d kv%d  (heuristic default)"):format(h.q, h.kv), 1, true), out)
      assert.truthy(out:find("block 64 chunk 512  (heuristic default)", 1, true), out)
      -- failed builds left nothing in the cache, and --list added nothing
      assert.same({}, helper.exists(d .. "/cache") and helper.ls(d .. "/cache") or {})
    end)

    it("two concurrent tunes of two configs into one file keep both; generate then uses them #slow", function()
      local d = folder("e2e")
      local db = d .. "/tune.json"
      local env = "ATTNGEN_CACHE=" .. helper.quote(d .. "/cache") .. " "
      local cmds = {}
      for i, name in ipairs({ "tx", "ty" }) do
        -- two shapes (configs that differ by name only share their results)
        local src = cfgsrc:format(name):gsub("head_dim = 16", i == 1 and "head_dim = 16" or "head_dim = 24")
        local file = helper.config_file(d, name, src)
        local args = { helper.quote(helper.bin), "tune", helper.quote(file), "--seq", "64", "--tiles", "48x64",
          "--blocks", "32", "--decode-seq", "256", "--db", helper.quote(db) }
        if i == 1 then
          args[#args + 1] = "--plot"
          args[#args + 1] = helper.quote(d .. "/tx.svg")
        end
        local log = helper.quote(d .. "/" .. name .. ".log")
        cmds[#cmds + 1] = ("%s%s >%s 2>&1"):format(env, table.concat(args, " "), log)
      end
      local code = helper.sh(("(%s) & (%s) & wait"):format(cmds[1], cmds[2]))
      assert.equal(0, code)
      for _, name in ipairs({ "tx", "ty" }) do
        local log = helper.read_file(d .. "/" .. name .. ".log")
        assert.truthy(log:find("recorded 2 results in", 1, true), log)
        -- not a terminal: one plain line per timed candidate
        assert.truthy(log:find("prefill 64x64 +%d/2 +q48 kv64 +[%d.]+ GFLOP/s"), log)
        -- MHA: the streaming kernel takes Lq <= 4, so decode is timed at 5 rows
        assert.truthy(log:find("decode 5x256 +%d/2 +block 32 chunk 512"), log)
      end
      local text = assert(helper.read_file(db))
      local parsed = json.decode(text)
      assert.is_table(parsed, "not valid JSON: " .. text)
      local db_t = assert(tunedb.load(db))
      local n, names = 0, {}
      for _, e in pairs(db_t.entries) do
        n = n + 1
        names[e.config .. ":" .. e.bucket] = true
        assert.is_true(e.gflops > 0)
        assert.equal(cpu, e.cpu)
        assert.is_true(tunedb.valid_tile(e.bucket, e.tile))
      end
      assert.equal(4, n)
      assert.same({ ["tx:prefill"] = true, ["tx:decode"] = true, ["ty:prefill"] = true, ["ty:decode"] = true }, names)
      -- the heatmap: a panel per shape, the pick outlined
      local svg = assert(helper.read_file(d .. "/tx.svg"))
      assert.truthy(svg:find("<svg", 1, true))
      assert.truthy(svg:find("prefill, Lq = 64, Lk = 64", 1, true))
      assert.truthy(svg:find("decode, Lq = 5, Lk = 256", 1, true))
      assert.truthy(svg:find("rgb%(214,%s*39,%s*40%)")) -- #d62728, the pick's outline
      -- generate with tile = "auto" now takes the tuned tiles
      local out = d .. "/gen"
      local gcode, _, gerr = helper.attngen({ "generate", "-q", d .. "/tx.lua", "-o", out },
        { env = { ATTNGEN_TUNE_DB = db } })
      assert.equal(0, gcode, gerr)
      local h = helper.read_file(out .. "/tx.h")
      assert.truthy(h:find("keys (tuned on " .. cpu .. " (" .. db, 1, true), h)
      assert.truthy(h:find(" * Decode: blocks of %d+ keys in splits of 512 %(tuned on "), h)
    end)
  end)
end)
