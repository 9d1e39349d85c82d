-- The build cache's keys: an entry compiled by one compiler, or with other
-- flags, is never used for another (generator/build.lua, M.key).
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local build = require("build")
assert(helper.root)

describe("build cache keys", function()
  local compiler, user_flags = build.compiler, build.user_flags
  after_each(function() build.compiler, build.user_flags = compiler, user_flags end)

  local GCC, CLANG = "gcc (Debian 12.2.0-14) 12.2.0", "Debian clang version 14.0.6"
  local function key(cc, flags, cid, text)
    build.compiler = function() return cc end
    build.user_flags = function() return flags end
    return build.key(text or "the kernel's text", cid or GCC)
  end

  it("are the same for the same inputs, compiler and flags", function()
    assert.equal(key("cc", "-O1"), key("cc", "-O1"))
    assert.matches("^%x+$", key("cc", ""))
  end)

  it("differ by the inputs, the compiler's version line, its command and the user's flags", function()
    local base = key("cc", "")
    local others = { key("cc", "", GCC, "another kernel's text"), key("cc", "", CLANG), key("clang", ""),
      key("gcc -m32", ""), key("cc", "-O1"), key("cc", "-march=native") }
    local seen = { [base] = true }
    for i, k in ipairs(others) do
      assert.is_nil(seen[k], "key " .. i .. " equals an earlier one")
      seen[k] = true
    end
  end)

  it("do not run a compiler together with its flags", function()
    -- the command and the flags are separated in the hashed text
    assert.not_equal(key("cc", "-O1 x"), key("cc -O1", " x"))
  end)
end)
