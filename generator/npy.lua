--- A reader of NumPy .npy files for the Lua side (`attngen plot weights`):
-- little-endian float32 ('<f4'), C order, format versions 1 to 3.  Anything
-- else is a one-line error naming the file and what it holds.  The C side
-- has its own reader (runtime/attn_npy.c) for the tools.
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
  if e == 0 then return sign * mant * 2 ^ -149 end
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

return M
