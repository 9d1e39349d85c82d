--- Functions over a number of lines (the house rule: 150), in C or Lua
-- source: the hand-written runtime and generator, or a rendered kernel file.
--
--   lua scripts/long_functions.lua [--limit N] [--rendered] FILE...
--
-- prints "LINES FILE:LINE NAME" for each function of more than N (150)
-- lines; --rendered leaves out the micro-kernels of a rendered file, which
-- are unrolled by design (a register block, M x N, in the name; the shared
-- int8 block dots, attn_idot* and attn_iqkeys*).  A C function is the lines
-- between a "{" and a "}" alone at the start of a line; a Lua one, a
-- function opened at the start of a line (function, local function, or
-- NAME = function) up to the "end" at the start of a line.  The busted spec
-- long_functions_spec.lua holds the tree and a few rendered configs to it.
local M = {}

M.LIMIT = 150

--- The functions of C text: a list of { name, line, lines }, in order.
function M.c_functions(text)
  local out, head, start, n = {}, nil, nil, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line == "{" and not start then
      start = n
    elseif start and line:sub(1, 1) == "}" then
      out[#out + 1] = { name = head or "?", line = start, lines = n - start - 1 }
      start, head = nil, nil
    elseif not start and line:match("^[%a_].*%(") then
      -- the first name before a "(" past any __attribute__((...)): the function's
      head = line:gsub("__attribute__%s*%b()", ""):match("([%a_][%w_]*)%s*%(")
    end
  end
  return out
end

--- The functions of Lua text: a list of { name, line, lines }, in order.
function M.lua_functions(text)
  local out, name, start, n = {}, nil, nil, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local opened = line:match("^local function ([%w_.:]+)") or line:match("^function ([%w_.:]+)")
      or line:match("^([%w_.:]+)%s*=%s*function")
    if opened and not start and not line:match("end[%s,)]*$") then
      name, start = opened, n
    elseif start and line:match("^end") then
      out[#out + 1] = { name = name, line = start, lines = n - start - 1 }
      start = nil
    end
  end
  return out
end

--- Whether a rendered function is a micro-kernel (unrolled by design).
function M.micro_kernel(name)
  return name:match("%d+x%d+") ~= nil or name:match("^attn_idot") ~= nil or name:match("^attn_iqkeys") ~= nil
end

--- The functions of text (Lua where lua, else C) over limit lines (M.LIMIT
-- where nil), micro-kernels left out where rendered: { name, line, lines }.
function M.long_text(text, lua, limit, rendered)
  local out = {}
  for _, fn in ipairs(lua and M.lua_functions(text) or M.c_functions(text)) do
    if fn.lines > (limit or M.LIMIT) and not (rendered and M.micro_kernel(fn.name)) then out[#out + 1] = fn end
  end
  return out
end

--- The same of a file (Lua where its name ends in .lua), each with its file.
function M.long(file, limit, rendered)
  local f = assert(io.open(file, "rb"))
  local text = f:read("*a")
  f:close()
  local out = M.long_text(text, file:match("%.lua$") ~= nil, limit, rendered)
  for _, fn in ipairs(out) do fn.file = file end
  return out
end

local function main(args)
  local limit, rendered, files = M.LIMIT, false, {}
  local i = 1
  while i <= #args do
    if args[i] == "--limit" then
      limit = tonumber(args[i + 1]) or error("--limit takes a number")
      i = i + 1
    elseif args[i] == "--rendered" then
      rendered = true
    else
      files[#files + 1] = args[i]
    end
    i = i + 1
  end
  local found = 0
  for _, file in ipairs(files) do
    for _, fn in ipairs(M.long(file, limit, rendered)) do
      print(("%d %s:%d %s"):format(fn.lines, fn.file, fn.line, fn.name))
      found = found + 1
    end
  end
  return found == 0 and 0 or 1
end

if arg and arg[0] and arg[0]:match("long_functions%.lua$") then os.exit(main(arg)) end
return M
