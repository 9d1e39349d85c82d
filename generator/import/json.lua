--- Strict JSON for import-hf: checks that a config.json is one JSON value
-- (RFC 8259) before dkjson decodes it, locates keys in the text for error
-- messages, and shows JSON values as text (in messages and in the comments
-- of a written config, where a string can neither break a line nor end a
-- comment).
local dkjson = require("dkjson")

local M = {}

--- What a JSON null decodes to (absent keys are nil).
M.NULL = setmetatable({}, { __tostring = function() return "null" end })

M.MAX_JSON_DEPTH = 256

--- Whether a value is null or absent.
function M.is_null(v) return v == nil or v == M.NULL end

--- Whether a decoded table is a JSON array (dkjson marks them; an empty
-- table counts as one).
function M.is_list(t)
  local mt = getmetatable(t)
  if mt and mt.__jsontype then return mt.__jsontype == "array" end
  return t[1] ~= nil or next(t) == nil
end

-- ---- values as text ---------------------------------------------------------

--- A string shown in a message or a comment: quoted, control characters
-- escaped, so that it can neither break a line nor end a comment.
function M.quote(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    if c == '"' or c == "\\" then return "\\" .. c end
    return ("\\%03d"):format(c:byte())
  end) .. '"'
end

--- A string with its control characters escaped (a line stays one line).
function M.plain(s)
  return (tostring(s):gsub("%c", function(c) return ("\\%03d"):format(c:byte()) end))
end

--- A number as text, the same on every Lua: integers without a fraction
-- (with ".0" when `float`), others the shortest text that reads back.
function M.num(v, float)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    local s = ("%d"):format(v)
    return float and (s .. ".0") or s
  end
  for _, digits in ipairs({ 15, 16, 17 }) do
    local s = ("%." .. digits .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return ("%.17g"):format(v)
end

--- A JSON value as it appears in a header line.
function M.show(v)
  if v == nil then return "absent" end
  if v == M.NULL then return "null" end
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
    return M.num(v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "string" then return M.quote(v) end
  if M.is_list(v) then
    if #v <= 4 then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = M.show(x) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    return ("[%d entries]"):format(#v)
  end
  return "{...}"
end

-- ---- positions in the text --------------------------------------------------

--- Line and column of byte `pos` in `text`.
function M.position(text, pos)
  pos = math.max(1, math.min(tonumber(pos) or 1, #text + 1))
  local line, start = 1, 1
  for nl in text:sub(1, pos - 1):gmatch("()\n") do
    line = line + 1
    start = nl + 1
  end
  return line, pos - start + 1
end

--- Line of the first `"key":` in a JSON text, or nil.
function M.line_of(text, key)
  if not text then return nil end
  local at = text:find('"' .. key:gsub("%p", "%%%0") .. '"%s*:')
  if not at then return nil end
  return (M.position(text, at))
end

-- ---- the syntax check -------------------------------------------------------
-- A scanner s = { text, pos, depth } walks the text; a syntax error is
-- raised as { pos, msg } and caught by check_syntax.

local function fail(s, msg, at)
  error({ pos = at or s.pos, msg = msg }, 0)
end

local function skip_ws(s) s.pos = s.text:find("[^ \t\r\n]", s.pos) or (#s.text + 1) end

local function char(s) return s.text:sub(s.pos, s.pos) end

local function scan_string(s)
  local text = s.text
  local i = s.pos + 1
  while true do
    local c = text:find('["\\%c]', i)
    if not c then fail(s, "unterminated string") end
    local ch = text:sub(c, c)
    if ch == '"' then
      s.pos = c + 1
      return
    elseif ch == "\\" then
      local e = text:sub(c + 1, c + 1)
      if e == "u" then
        if not text:sub(c + 2, c + 5):match("^%x%x%x%x$") then fail(s, "bad \\u escape in a string", c) end
        i = c + 6
      elseif e ~= "" and ('"\\/bfnrt'):find(e, 1, true) then
        i = c + 2
      else
        fail(s, "bad escape in a string", c)
      end
    else
      fail(s, "control character in a string", c)
    end
  end
end

local function scan_number(s)
  local text, p = s.text, s.pos
  if text:sub(p, p) == "-" then p = p + 1 end
  if text:sub(p, p) == "0" then
    p = p + 1
  elseif text:find("^[1-9]", p) then
    p = select(2, text:find("^%d+", p)) + 1
  else
    fail(s, "no valid JSON value")
  end
  if text:sub(p, p) == "." then
    local _, e = text:find("^%d+", p + 1)
    if not e then fail(s, "digits expected after '.'", p) end
    p = e + 1
  end
  if text:find("^[eE]", p) then
    local _, e = text:find("^[-+]?%d+", p + 1)
    if not e then fail(s, "digits expected in the exponent", p) end
    p = e + 1
  end
  s.pos = p
end

--- An object or array: `close` ends it, `item` scans one member or element.
local function scan_container(s, close, item)
  s.depth = s.depth + 1
  if s.depth > M.MAX_JSON_DEPTH then fail(s, "nested too deeply") end
  s.pos = s.pos + 1
  skip_ws(s)
  if char(s) == close then
    s.pos = s.pos + 1
  else
    while true do
      item(s)
      skip_ws(s)
      local c = char(s)
      if c == close then
        s.pos = s.pos + 1
        break
      elseif c == "," then
        s.pos = s.pos + 1
      else
        fail(s, ("',' or '%s' expected"):format(close))
      end
    end
  end
  s.depth = s.depth - 1
end

local scan_value

local function scan_member(s)
  skip_ws(s)
  if char(s) ~= '"' then fail(s, "a quoted key expected") end
  scan_string(s)
  skip_ws(s)
  if char(s) ~= ":" then fail(s, "':' expected after the key") end
  s.pos = s.pos + 1
  scan_value(s)
end

scan_value = function(s)
  skip_ws(s)
  local c, text, pos = char(s), s.text, s.pos
  if c == "{" then scan_container(s, "}", scan_member)
  elseif c == "[" then scan_container(s, "]", scan_value)
  elseif c == '"' then scan_string(s)
  elseif text:find("^true", pos) then s.pos = pos + 4
  elseif text:find("^false", pos) then s.pos = pos + 5
  elseif text:find("^null", pos) then s.pos = pos + 4
  elseif c == "" then fail(s, "no JSON value (the text ends)")
  else scan_number(s) end
end

--- Checks that `text` is one JSON value (RFC 8259) and nothing else.
-- dkjson accepts some malformed text (a missing comma or colon) and reads
-- something from it; a config.json with such a typo is refused instead.
-- Returns true, or nil, byte position, message.
local function check_syntax(text)
  local s = { text = text, pos = 1, depth = 0 }
  local ok, e = pcall(function()
    scan_value(s)
    skip_ws(s)
    if s.pos <= #text then fail(s, "unexpected text after the top-level value") end
  end)
  if ok then return true end
  if type(e) == "table" then return nil, e.pos, e.msg end
  return nil, s.pos, tostring(e)
end

--- Decodes the text of a config.json.  Returns the top-level object, or
-- nil and a one-line "file:line: invalid JSON: ..." message.
function M.decode(text, file)
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end -- a UTF-8 byte order mark
  local good, at, why = check_syntax(text)
  if not good then
    local line, col = M.position(text, at)
    return nil, ("%s:%d: invalid JSON: %s (column %d)"):format(file, line, why:gsub("%s*\n%s*", " "), col)
  end
  local ok, obj, _, msg = pcall(dkjson.decode, text, 1, M.NULL)
  if not ok or obj == nil then
    return nil, ("%s: invalid JSON: %s"):format(file, (tostring(ok and msg or obj):gsub("%s*\n%s*", " ")))
  end
  if type(obj) ~= "table" or M.is_list(obj) then
    return nil, ("%s:1: a config.json holds a JSON object ({...}), got %s"):format(file,
      type(obj) == "table" and "an array" or M.show(obj))
  end
  return obj
end

return M
