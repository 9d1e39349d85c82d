--- Checks that a micro-kernel's name (generator/naming.lua: named by its
-- math) says everything its text depends on:
--   lua tests/check_micro_kernels.lua FILE.c...
-- Every definition of a function whose name parses to a micro-kernel, with
-- the comment above it, must be the same text in every file that has it,
-- and once in a file for each build part it is in.  Prints the count of
-- distinct kernels and of definitions; exits 1 (naming both files) where one
-- name has two texts.
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path
local naming = require("naming")

--- The micro-kernels the text defines: name -> { text (the comment above
-- and the definition, from the start of its line), part (the build part) }
-- in a list, in order.
local parsed = {} -- name -> naming.parse's answer (false: none)
local function micro_kernels(src)
  local out, marks = {}, {} -- marks: where each build part's section opens
  for at, k in src:gmatch("()ATTN_BUILD_PART == (%d+)%)?\n") do marks[#marks + 1] = { at = at, part = tonumber(k) } end
  for pos, name in src:gmatch("()(attn_[%w_]+)%(") do
    local p = parsed[name]
    if p == nil then
      p = naming.parse(name) or false
      parsed[name] = p
    end
    if p and p.m and not p.config then
      local _, close = src:find("^%b()", pos + #name)
      local brace = close and select(2, src:find("^%s*{", close + 1))
      local near = math.max(1, pos - 1000)
      local line_start = near + ((src:sub(near, pos):match(".*\n()") or 1) - 1)
      local head = src:sub(line_start, pos - 1)
      if brace and head:find("static", 1, true) and not head:find(";", 1, true) then
        local _, last = src:find("^%b{}", brace)
        local from = line_start -- the comment that ends on the line above, if any
        local above = src:sub(math.max(1, line_start - 4000), line_start - 1)
        local cstart = above:match(".*()/%*")
        if cstart and above:sub(cstart):match("^/%*.-%*/%s*$") then from = line_start - #above + cstart - 1 end
        local part = 0
        for _, m in ipairs(marks) do
          if m.at < pos then part = m.part end
        end
        out[#out + 1] = { name = name, text = src:sub(from, last), part = part }
      end
    end
  end
  return out
end

local seen, defs, failed = {}, 0, false
for _, path in ipairs(arg) do
  local f = assert(io.open(path, "rb"))
  local src = f:read("*a")
  f:close()
  local parts = {}
  for _, k in ipairs(micro_kernels(src)) do
    defs = defs + 1
    local key = k.name .. "@" .. k.part
    if parts[key] then
      io.stderr:write(("%s: %s defined twice in build part %d\n"):format(path, k.name, k.part))
      failed = true
    end
    parts[key] = true
    local first = seen[k.name]
    if not first then
      seen[k.name] = { text = k.text, path = path }
    elseif first.text ~= k.text then
      io.stderr:write(("%s: %s differs from its text in %s\n"):format(path, k.name, first.path))
      failed = true
    end
  end
end
local n = 0
for _ in pairs(seen) do n = n + 1 end
print(("%d micro-kernels named by their math, %d definitions in %d files"):format(n, defs, #arg))
os.exit(failed and 1 or 0)
