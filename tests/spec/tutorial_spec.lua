-- The tutorials' worked example, end to end through `attngen run`: one query
-- over two keys, D = 4, V the identity's rows, so O is the weights.  With
-- q . k1 - q . k2 = 2, scale 1 gives the weights [0.8808, 0.1192] and scale
-- 0.5 gives [0.7311, 0.2689] (softmax of [2, 0] and of [1, 0]).  Compiles
-- C, so tagged #slow.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local npy = require("npy")

describe("the tutorials' worked example #slow", function()
  local tmp, env
  setup(function()
    tmp = helper.tmpdir()
    env = helper.build_env(tmp)
    -- [B][L][H][D]: q = [1, 1, 0, 0]; k1 = [1, 1, 0, 0] (score 2), k2 = [0, 0, 1, 1] (score 0)
    assert(npy.write_f32(tmp .. "/q.npy", { 1, 1, 1, 4 }, { 1, 1, 0, 0 }))
    assert(npy.write_f32(tmp .. "/k.npy", { 1, 2, 1, 4 }, { 1, 1, 0, 0, 0, 0, 1, 1 }))
    assert(npy.write_f32(tmp .. "/v.npy", { 1, 2, 1, 4 }, { 1, 0, 0, 0, 0, 1, 0, 0 }))
    helper.config_file(tmp, "tutorial", [[
return { name = "tutorial", heads_q = 1, heads_kv = 1, head_dim = 4, weights = true }
]])
  end)
  teardown(function() helper.rmtree(tmp) end)

  local function values(p)
    local a = assert(npy.read_f32(p))
    local out = {}
    for k = 0, a.count - 1 do out[k + 1] = npy.at(a, k) end
    return out
  end

  for _, case in ipairs({ { scale = "1", w = { 0.8808, 0.1192 } }, { scale = "0.5", w = { 0.7311, 0.2689 } } }) do
    it("gives the weights " .. case.w[1] .. ", " .. case.w[2] .. " at scale " .. case.scale, function()
      local o, w = tmp .. "/o" .. case.scale .. ".npy", tmp .. "/w" .. case.scale .. ".npy"
      local code, _, err = helper.attngen({ "run", tmp .. "/tutorial.lua", "--set", "scale=" .. case.scale,
        "--q", tmp .. "/q.npy", "--k", tmp .. "/k.npy", "--v", tmp .. "/v.npy", "-o", o, "--weights", w },
        { env = env })
      assert.equal(0, code, err)
      local got_w, got_o = values(w), values(o)
      for j = 1, 2 do
        assert.is_true(math.abs(got_w[j] - case.w[j]) < 5e-5, ("weight %d: %s"):format(j, got_w[j]))
        assert.is_true(math.abs(got_o[j] - case.w[j]) < 5e-5, ("O[%d]: %s"):format(j, got_o[j]))
      end
      assert.equal(0, got_o[3])
      assert.equal(0, got_o[4])
    end)
  end
end)
