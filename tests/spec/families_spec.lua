-- The family registry (generator/families/): every family table has every
-- field, with the right type; every preset and test config is of a family;
-- an unknown kind is a one-line config error.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local families = require("families")
local planner = require("planner")
local presets = require("presets")
local render = require("render")
local schema = require("schema")
local tunedb = require("tunedb")
local kernel_sets = dofile(helper.root .. "/tests/kernel_sets.lua")

local function is_list_of(t, ty)
  if type(t) ~= "table" then return false end
  for k, v in pairs(t) do
    if type(k) ~= "number" or type(v) ~= ty then return false end
  end
  return true
end

local function member(x, t)
  for _, y in ipairs(t) do if x == y then return true end end
  return false
end

--- Every config file of the repository: presets and test configs.
local function config_files()
  local files = {}
  for _, d in ipairs({ "configs", "configs/test" }) do
    for _, f in ipairs(require("pl.dir").getfiles(helper.root .. "/" .. d, "*.lua")) do files[#files + 1] = f end
  end
  table.sort(files)
  return files
end

describe("the family registry", function()
  it("lists the families the schema accepts, the default among them", function()
    assert.is_true(#families.names >= 4)
    assert.is_true(member(families.DEFAULT, families.names))
    for _, n in ipairs(families.names) do
      assert.equal(n, families.get(n).name)
      assert.equal(families.get(n), families.of({ kind = n }))
    end
    assert.equal(families.get(families.DEFAULT), families.of({}))
    assert.is_nil(families.get("flash"))
    assert.is_nil(families.of({ kind = "flash" }))
  end)

  for _, n in ipairs(families.names) do
    describe("family " .. n, function()
      local f = families.get(n)

      it("has every field, and no field the registry does not describe", function()
        for field in pairs(families.FIELDS) do
          assert.is_not_nil(f[field], ("family %s has no field '%s'"):format(n, field))
        end
        for field in pairs(f) do
          assert.truthy(families.FIELDS[field] or families.OPTIONAL_FIELDS[field],
            ("family %s has field '%s', which families.FIELDS does not describe"):format(n, field))
        end
        assert.is_string(f.noun)
        assert.is_boolean(f.tiled)
        assert.is_true(member(f.memory, { "kv_cache", "state", "encoder_states" }), f.memory)
        assert.truthy(f.args == "attn_args" or f.args == "attn_classic_args", f.args)
      end)

      it("names a schema and a planner module with their interface", function()
        local s = families.schema(n)
        assert.is_true(is_list_of(s.order, "string"))
        assert.is_function(s.normalize)
        local p = families.planner(n)
        assert.is_function(p.plan)
        assert.is_function(p.default_tile)
        assert.equal(p, planner.family(n))
      end)

      it("computes in f32 and in no product type the schema does not know", function()
        assert.is_true(is_list_of(f.matmuls, "string"))
        assert.equal("f32", f.matmuls[1])
        for _, m in ipairs(f.matmuls) do assert.truthy(m == "f32" or m == "bf16" or m == "int8", m) end
      end)

      it("has a forward direction, each direction's templates existing files", function()
        assert.is_table(f.directions.forward)
        for name, d in pairs(f.directions) do
          for field in pairs(families.DIRECTION_FIELDS) do
            assert.is_not_nil(d[field], ("family %s, direction %s: no field '%s'"):format(n, name, field))
          end
          for _, which in ipairs({ "h", "c" }) do
            local t = d.templates[which]
            assert.is_string(t)
            assert.truthy(helper.exists(helper.root .. "/templates/" .. t), t)
          end
          for _, t in ipairs(d.parts or {}) do assert.truthy(helper.exists(helper.root .. "/templates/" .. t), t) end
          for field in pairs(d) do
            assert.truthy(families.DIRECTION_FIELDS[field] or families.OPTIONAL_DIRECTION_FIELDS[field],
              ("family %s, direction %s: unknown field '%s'"):format(n, name, field))
          end
          assert.equal(d, families.direction(n, name))
        end
      end)

      it("describes a vendored kernel, tunes known buckets, says why a command does nothing", function()
        assert.is_function(f.vendor.describe)
        assert.is_true(is_list_of(f.tune.buckets, "string"))
        for _, b in ipairs(f.tune.buckets) do assert.is_true(member(b, tunedb.BUCKETS), b) end
        if f.tune.grid then
          assert.is_true(is_list_of(f.tune.grid.qs, "number"))
          assert.is_true(is_list_of(f.tune.grid.kvs, "number"))
          assert.is_number(f.tune.grid.exhaustive.q_step)
        end
        assert.is_boolean(f.bench.decode_table)
        for cmd, why in pairs(f.unsupported) do
          assert.is_true(member(cmd, families.COMMANDS), cmd)
          assert.is_string(why)
          assert.is_nil(why:find("\n"))
        end
        -- a family with nothing to tune says why
        assert.equal(#f.tune.buckets == 0, f.unsupported.tune ~= nil)
      end)

      it("tells the test sets which keys a config needs, its dims and its own features", function()
        assert.is_true(is_list_of(f.check.required, "string"))
        assert.is_function(f.check.dims)
        assert.is_table(f.check.features)
        for _, feat in ipairs(f.check.features) do
          assert.is_string(feat[1])
          assert.is_function(feat[2])
        end
      end)
    end)
  end

  it("has every preset and test config of a family, and renders it from that family's templates", function()
    local seen = {}
    for _, file in ipairs(config_files()) do
      local raw = assert(kernel_sets.load(file))
      assert.is_not_nil(families.of(raw), file)
      local cfg = assert(presets.load(file))
      local f = families.of(cfg)
      assert.is_not_nil(f, file)
      assert.equal(cfg.kind, f.name)
      assert.equal(f, kernel_sets.family(raw))
      for _, k in ipairs(f.check.required) do assert.is_number(raw[k], file .. ": " .. k) end
      if not seen[f.name] then
        seen[f.name] = true
        local plan = planner.plan(cfg)
        local files = render.kernel_files(plan, "attngen generate test")
        assert.truthy(files[2].text:find("from templates/" .. f.directions.forward.templates.c, 1, true), file)
        assert.same(files, render.kernel_files(plan, "attngen generate test", "forward"))
        assert.has_error(function() render.kernel_files(plan, "x", "sideways") end,
          ("family %s has no direction 'sideways'"):format(f.name))
        local d = f.vendor.describe(plan)
        assert.is_string(d.features)
        assert.is_string(d.dtypes)
      end
    end
    for _, n in ipairs(families.names) do assert.is_true(seen[n], "no config of family " .. n) end
  end)

  -- the long extreme-value cases (tests/test_extremes.c) and the sanitizers run
  -- the options on the test configs' small shapes, trusting them to have every
  -- option (feature) some preset has
  it("has test configs with every feature of the presets", function()
    local of_tests, missing = {}, {}
    for _, file in ipairs(config_files()) do
      if file:match("/test/[^/]*$") then
        for feat in pairs((kernel_sets.features(assert(kernel_sets.load(file))))) do of_tests[feat] = true end
      end
    end
    for _, file in ipairs(config_files()) do
      if not file:match("/test/[^/]*$") then
        local _, list = kernel_sets.features(assert(kernel_sets.load(file)))
        for _, feat in ipairs(list) do
          if not of_tests[feat] then missing[#missing + 1] = file .. ": " .. feat end
        end
      end
    end
    assert.same({}, missing)
  end)

  it("refuses an unknown kind with a one-line config error naming the families", function()
    local cfg, key, msg = schema.normalize({ name = "x", kind = "flash", query_dim = 8, heads_q = 2 })
    assert.is_nil(cfg)
    assert.equal("kind", key)
    assert.is_nil(msg:find("\n"))
    assert.truthy(msg:find(table.concat(families.names, ", "), 1, true), msg)
    assert.truthy(msg:find("flash", 1, true), msg)

    local code, out, err = helper.attngen({ "generate", "configs/test/t_additive.lua", "--set", 'kind="flash"',
      "-o", helper.tmpdir() })
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal(1, #helper.lines(err), err)
    assert.truthy(err:find("^attngen: .*'kind' must be one of sdpa, linear, additive, luong, got flash\n$"), err)
  end)

  it("refuses a product type the family does not compute in, naming the families that do", function()
    local _, key, msg = schema.normalize({ name = "x", kind = "linear", heads_q = 2, head_dim = 8, dtype = "bf16",
      matmul = "bf16" })
    assert.equal("matmul", key)
    assert.equal('matmul = "bf16" is for the sdpa family; kind "linear" multiplies in f32', msg)
  end)
end)
