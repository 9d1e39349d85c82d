--- NumPy .npy files for the Lua side (`attngen plot weights`, `attngen
-- rollout`): reads little-endian float32 ('<f4'), C order, format versions 1
-- to 3, and writes the same (version 1).  Anything else is a one-line error
-- naming the file and what it holds.  The C side has its own reader and
-- writer (runtime/attn_npy.c) for the tools.
local util = require("util")

local M = {}

local function u16(s, pos) local a, b = s:byte(pos, pos + 1); return a + b * 256 end
local function u32(s, pos)
  local a, b, c, d = s:byte(pos, pos + 3)
  return a + b * 256 + c * 65536 + d * 16777216
end

--- The float32 at byte offset pos (1-based) of s, little-endian.
function M.f32(s, pos)
  local b1, b2, b3, b4 = s:byte(pos, pos + 3)
  local sign = b4 >= 128 and -1 or 1
  local e = (b4 % 128) * 2 + math.floor(b3 / 128)
  local mant = ((b3 % 128) * 256 + b2) * 256 + b1
  if e == 255 then
    if mant == 0 then return sign * math.huge end
    return 0 / 0
  end
  if e == 0 then return sign * (mant * 2 ^ -149) end -- a float, so that -0 keeps its sign (Lua 5.3+ integers)
  return sign * (1 + mant / 8388608) * 2 ^ (e - 127)
end

--- The shape as text: (2, 4, 8, 8).
function M.shape_text(shape)
  local parts = {}
  for i, n in ipairs(shape) do parts[i] = tostring(n) end
  if #parts == 1 then return "(" .. parts[1] .. ",)" end
  return "(" .. table.concat(parts, ", ") .. ")"
end

--- Parses the header of .npy bytes; returns descr, fortran_order, shape,
-- data offset (1-based), or nil and what is wrong.
local function header(s)
  if #s < 10 or s:sub(1, 6) ~= "\147NUMPY" then return nil, "not a .npy file (no \\x93NUMPY magic)" end
  local major = s:byte(7)
  local len, start
  if major == 1 then len, start = u16(s, 9), 11
  elseif major == 2 or major == 3 then
    if #s < 12 then return nil, "a truncated .npy header" end
    len, start = u32(s, 9), 13
  else return nil, ("an unknown .npy format version %d"):format(major) end
  if #s < start + len - 1 then return nil, "a truncated .npy header" end
  local h = s:sub(start, start + len - 1)
  local descr = h:match("['\"]descr['\"]%s*:%s*['\"]([^'\"]*)['\"]")
  local fortran = h:match("['\"]fortran_order['\"]%s*:%s*(%a+)")
  local shape_text = h:match("['\"]shape['\"]%s*:%s*(%b())")
  if not descr or not fortran or not shape_text then
    return nil, "a .npy header without descr, fortran_order or shape"
  end
  local shape = {}
  for item in shape_text:sub(2, -2):gmatch("[^,]+") do
    local t = item:gsub("%s", ""):gsub("L$", "")
    if t ~= "" then
      local n = tonumber(t)
      if not n or n < 0 or n ~= math.floor(n) then
        return nil, ("a .npy shape %s that is not integers"):format(shape_text)
      end
      shape[#shape + 1] = n
    end
  end
  return descr, fortran == "True", shape, start + len
end

--- Reads a float32 .npy file.  Returns { shape = {...}, bytes = the file,
-- offset = where the data starts (1-based), count = elements }, or nil and a
-- one-line error.
function M.read_f32(p)
  local s, err = util.read_file(p)
  if not s then return nil, ("%s: cannot read: %s"):format(p, tostring(err)) end
  local descr, fortran, shape, offset = header(s)
  if not descr then return nil, ("%s: %s"):format(p, fortran) end
  if descr ~= "<f4" then
    return nil, ("%s: holds dtype '%s'; only little-endian float32 ('<f4') is read"):format(p, descr)
  end
  if fortran then return nil, ("%s: is in Fortran order; only C order is read"):format(p) end
  local count = 1
  for _, n in ipairs(shape) do count = count * n end
  local have = #s - offset + 1
  if have ~= count * 4 then
    return nil, ("%s: shape %s needs %d bytes of data, the file holds %d"):format(p, M.shape_text(shape),
      count * 4, have)
  end
  return { shape = shape, bytes = s, offset = offset, count = count }
end

--- Element k (0-based, C order) of an array that read_f32 returned.
function M.at(a, k)
  return M.f32(a.bytes, a.offset + 4 * k)
end

--- The 4 bytes of x as a little-endian float32, rounded to nearest even
-- (string.pack where the interpreter has it, else from the bits: LuaJIT
-- and Lua 5.1 have math.frexp).
local pack, frexp = rawget(string, "pack"), rawget(math, "frexp")
local function f32_bytes(x)
  if pack then return pack("<f", x) end
  local sign = (x < 0 or 1 / x < 0) and 128 or 0
  x = math.abs(x)
  local e, m
  if x ~= x then e, m = 255, 4194304
  elseif x == math.huge then e, m = 255, 0
  else
    local fr, ex = frexp(x) -- x = fr * 2^ex, 0.5 <= fr < 1
    if x == 0 then e, m = 0, 0
    elseif ex > -126 then
      e, m = ex + 126, fr * 16777216 - 8388608 -- 23 fraction bits
    else
      e, m = 0, x * 2 ^ 149 -- subnormal
    end
    local r = math.floor(m)
    local rest = m - r
    if rest > 0.5 or (rest == 0.5 and r % 2 == 1) then r = r + 1 end
    m = r
    if m >= 8388608 then e, m = e + 1, m - 8388608 end -- carried into the exponent
    if e >= 255 then e, m = 255, 0 end
  end
  return string.char(m % 256, math.floor(m / 256) % 256, math.floor(m / 65536) + (e % 2) * 128,
    sign + math.floor(e / 2))
end

--- Writes values (a Lua array, C order) as a float32 .npy file of the
-- given shape, atomically (a finished file or none).  Returns true, or nil
-- and a one-line error.
function M.write_f32(p, shape, values)
  local head = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"):format(M.shape_text(shape))
  local pad = 64 - (10 + #head + 1) % 64
  if pad == 64 then pad = 0 end
  head = head .. (" "):rep(pad) .. "\n"
  local parts = { "\147NUMPY\1\0", string.char(#head % 256, math.floor(#head / 256)), head }
  for i = 1, #values do parts[#parts + 1] = f32_bytes(values[i]) end
  local ok, err = util.write_atomic(p, table.concat(parts))
  if ok == nil then -- false: the file already held exactly these bytes
    err = tostring(err)
    return nil, err:find(p, 1, true) and err or ("%s: cannot write: %s"):format(p, err)
  end
  return true
end

return M
