-- attngen rollout: the math on matrices worked out by hand (mean and max over
-- heads, the residual, renormalized rows, the layers' order), .npy float32
-- written and read back, and the command's output and one-line errors.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local npy = require("npy")
local rollout = require("rollout")

describe("rollout", function()
  local tmp
  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  local function write(name, shape, values)
    local p = tmp .. "/" .. name
    assert(npy.write_f32(p, shape, values))
    return p
  end

  local function read_all(p)
    local a = assert(npy.read_f32(p))
    local out = {}
    for k = 0, a.count - 1 do out[k + 1] = npy.at(a, k) end
    return out, a.shape
  end

  local function near(want, got)
    assert.equal(#want, #got)
    for k = 1, #want do
      assert.is_true(math.abs(want[k] - got[k]) < 1e-6, ("element %d: %s, want %s"):format(k, got[k], want[k]))
    end
  end

  it("writes float32 .npy files that read back exactly", function()
    local zero = 0.5 - 0.5
    local values = { 0.5, -2.5, 0.1, 1e-45, -zero, 3.4028234663852886e38, 1 / 0, 65504, 1 + 2 ^ -23 }
    local got, shape = read_all(write("roundtrip.npy", { 3, 3 }, values))
    assert.same({ 3, 3 }, shape)
    assert.equal(0.5, got[1])
    assert.equal(-2.5, got[2])
    assert.is_true(math.abs(got[3] - 0.1) < 1e-8 and got[3] ~= 0.1) -- rounded to float32
    assert.equal(2 ^ -149, got[4]) -- 1e-45 rounds to the smallest subnormal
    assert.equal(-math.huge, 1 / got[5]) -- -0 keeps its sign
    assert.equal(3.4028234663852886e38, got[6])
    assert.equal(math.huge, got[7])
    assert.equal(65504, got[8])
    assert.equal(1 + 2 ^ -23, got[9])
  end)

  it("mixes in the residual and multiplies the layers, first layer first", function()
    -- A1 = [[1, 0], [0.5, 0.5]], A2 = [[0.5, 0.5], [0, 1]], r = 0.5:
    -- A~1 = [[1, 0], [0.25, 0.75]], A~2 = [[0.75, 0.25], [0, 1]],
    -- R = A~2 A~1 = [[0.8125, 0.1875], [0.25, 0.75]]
    local l1 = write("l1.npy", { 1, 1, 2, 2 }, { 1, 0, 0.5, 0.5 })
    local l2 = write("l2.npy", { 1, 1, 2, 2 }, { 0.5, 0.5, 0, 1 })
    local layers, shape = assert(rollout.read_layers({ l1, l2 }))
    near({ 0.8125, 0.1875, 0.25, 0.75 }, rollout.rollout(layers, shape, "mean", 0.5))
    near({ 1, 0, 0.25, 0.75 }, rollout.rollout({ layers[1] }, shape, "mean", 0.5))
    -- r = 0: the plain product A2 A1 = [[0.75, 0.25], [0.5, 0.5]]
    near({ 0.75, 0.25, 0.5, 0.5 }, rollout.rollout(layers, shape, "mean", 0))
  end)

  it("combines heads by mean or max and renormalizes the rows", function()
    -- head 0 = I, head 1 = the swap: mean = 0.5 everywhere; max = 1 everywhere, rows renormalized to 0.5
    local p = write("heads.npy", { 1, 2, 2, 2 }, { 1, 0, 0, 1, 0, 1, 1, 0 })
    local layers, shape = assert(rollout.read_layers({ p }))
    near({ 0.5, 0.5, 0.5, 0.5 }, rollout.rollout(layers, shape, "mean", 0))
    near({ 0.5, 0.5, 0.5, 0.5 }, rollout.rollout(layers, shape, "max", 0))
    -- r = 1: the identity whatever the weights
    near({ 1, 0, 0, 1 }, rollout.rollout(layers, shape, "max", 1))
  end)

  it("takes [B][L][L] (heads combined) and keeps batch entries apart", function()
    local p = write("bll.npy", { 2, 2, 2 }, { 1, 0, 0, 1, 0, 1, 1, 0 })
    local layers, shape = assert(rollout.read_layers({ p, p }))
    -- entry 0: I I = I; entry 1: the swap twice = I (r = 0)
    near({ 1, 0, 0, 1, 1, 0, 0, 1 }, rollout.rollout(layers, shape, "mean", 0))
  end)

  describe("the command", function()
    it("writes R [B][L][L], which plot weights draws", function()
      local l1 = write("c1.npy", { 1, 1, 2, 2 }, { 1, 0, 0.5, 0.5 })
      local l2 = write("c2.npy", { 1, 1, 2, 2 }, { 0.5, 0.5, 0, 1 })
      local out = tmp .. "/r.npy"
      local code, _, err = helper.attngen({ "rollout", l1, l2, "-o", out })
      assert.equal(0, code, err)
      local got, shape = read_all(out)
      assert.same({ 1, 2, 2 }, shape)
      near({ 0.8125, 0.1875, 0.25, 0.75 }, got)
      code, _, err = helper.attngen({ "plot", "weights", out, "-o", tmp .. "/r.svg" })
      assert.equal(0, code, err)
      assert.is_true(helper.exists(tmp .. "/r.svg"))
    end)

    it("fails in one line on bad input and writes nothing", function()
      local ok1 = write("e1.npy", { 1, 1, 2, 2 }, { 1, 0, 0, 1 })
      local wide = write("e2.npy", { 1, 1, 2, 3 }, { 1, 0, 0, 0, 1, 0 })
      local three = write("e3.npy", { 1, 1, 3, 3 }, { 1, 0, 0, 0, 1, 0, 0, 0, 1 })
      local out = tmp .. "/never.npy"
      for _, args in ipairs({
        { "rollout", wide, "-o", out },
        { "rollout", ok1, three, "-o", out },
        { "rollout", ok1, "-o", out, "--residual", "1.5" },
        { "rollout", ok1, "-o", out, "--heads", "min" },
        { "rollout", ok1, tmp .. "/missing.npy", "-o", out },
        { "rollout", ok1, "-o", ok1 },
      }) do
        local code, _, err = helper.attngen(args)
        assert.equal(2, code, table.concat(args, " "))
        assert.equal(1, #helper.lines(err), err)
        assert.equal("attngen: ", err:sub(1, 9))
      end
      assert.is_false(helper.exists(out))
      near({ 1, 0, 0, 1 }, (read_all(ok1)))
    end)
  end)
end)
