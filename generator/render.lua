--- Rendering templates/ with a plan: pl.template with "@" marking Lua lines
-- (so C preprocessor lines pass through) and $(expr) for values.
local template = require("pl.template")
local families = require("families")
local util = require("util")
local schema = require("schema")
local version = require("version")
local naming = require("naming")

local M = {}

local compiled = {}

local function load_template(name)
  if compiled[name] then return compiled[name] end
  local file = util.root .. "/templates/" .. name
  local src, err = util.read_file(file)
  if not src then error(("cannot read template %s: %s"):format(file, tostring(err)), 0) end
  local ct, cerr = template.compile(src, { escape = "@", chunk_name = "templates/" .. name })
  if not ct then error(("templates/%s: %s"):format(name, tostring(cerr)), 0) end
  compiled[name] = ct
  return ct
end

local function mask_summary(p)
  local parts = {}
  if p.causal then parts[#parts + 1] = p.top_left and "causal (top-left)" or "causal (bottom-right)" end
  if p.has_left or p.has_right then
    parts[#parts + 1] = ("window left %d, right %d"):format(p.window_left, p.window_right)
  end
  if p.chunk then parts[#parts + 1] = ("chunks of %d keys"):format(p.chunk) end
  if p.sparse then
    parts[#parts + 1] = p.sparse.pattern == "strided" and ("sparse strided, stride %d"):format(p.sparse.stride)
      or ("sparse fixed, block %d, summary %d"):format(p.sparse.block, p.sparse.summary)
  end
  if (p.global_tokens or 0) > 0 then parts[#parts + 1] = ("%d global tokens"):format(p.global_tokens) end
  if p.padding then parts[#parts + 1] = "padding (seqlens_k)" end
  if p.mask and p.mask ~= "none" then parts[#parts + 1] = p.mask .. " mask tensor" end
  if p.softcap then parts[#parts + 1] = ("softcap %s"):format(util.c_float(p.softcap)) end
  if p.alibi then parts[#parts + 1] = "ALiBi" end
  if #parts == 0 then return "none" end
  return table.concat(parts, ", ")
end

local environment

--- Renders a template fragment (no banner) with the plan's environment plus
-- `extra`; the text has no trailing newline.
function M.fragment(tmpl, plan, extra)
  local env = environment(plan)
  for k, v in pairs(extra or {}) do env[k] = v end
  local out, err = load_template(tmpl):render(env)
  if not out then error(("templates/%s: %s"):format(tmpl, tostring(err)), 0) end
  return (out:gsub("\n+$", ""))
end

--- The environment templates see: the plan, the names (N for the
-- config's symbols, S for shared helpers), lib() and family() to render a
-- fragment of templates/lib/ or templates/families/ in place, and a few
-- spelling helpers.
function environment(plan)
  -- each ISA's intrinsics header, behind its architecture's guard and,
  -- in a build part (lib/dispatch), only in the parts of its variants:
  -- x86's headers alone take a compiler about half a second to read
  local includes, seen = {}, {}
  for _, v in ipairs(plan.variants) do
    local isa = v.isa
    if isa.include and not seen[isa.include] then
      seen[isa.include] = { guard = isa.arch_guard or "1", header = isa.include, parts = {}, has = {} }
      includes[#includes + 1] = seen[isa.include]
    end
    local inc = isa.include and seen[isa.include]
    if inc and v.build_part and not inc.has[v.build_part] then
      inc.has[v.build_part] = true
      inc.parts[#inc.parts + 1] = "ATTN_BUILD_PART == " .. v.build_part
    end
  end
  for _, inc in ipairs(includes) do
    if #inc.parts > 0 then
      inc.guard = ("(%s) && (!defined(ATTN_BUILD_PART) || %s)"):format(inc.guard, table.concat(inc.parts, " || "))
    end
  end
  local has_stream = false
  for _, v in ipairs(plan.variants) do has_stream = has_stream or v.stream ~= nil end
  return {
    p = plan,
    has_stream = has_stream,
    ipairs = ipairs, math = math, table = table, string = string, tostring = tostring, tonumber = tonumber,
    upper = string.upper,
    c_float = util.c_float,
    chomp = function(s) return (s:gsub("\n+$", "")) end,
    join_range = function(a, b, f, sep)
      local t = {}
      for i = a, b do t[#t + 1] = f(i) end
      return table.concat(t, sep)
    end,
    mask_summary = mask_summary(plan),
    intrinsic_includes = includes,
    N = function(op, t) return naming.build(plan.name, op, t) end,
    S = naming.shared,
    C = naming.common,
    -- the streaming decode's four-float helpers of variant v (lib/dot's
    -- one-key step, lib/decode_qblock's block step): exp2 and tanh of a q4
    -- expression (the variant's vector math), and the running max a row
    -- subtracts (0 for a row still at -inf, where 2^(x - -inf) would be NaN)
    q4_math = function(v)
      local q4 = v.isa.q4
      return {
        exp2 = function(x) return naming.shared("exp2", v.name, true) .. "(" .. x .. ")" end,
        tanh = function(x) return naming.shared("tanh", v.name, true) .. "(" .. x .. ")" end,
        mref = function(x) return q4.select_lt(x, q4.set1("-3.0e38f"), q4.zero(), x) end,
      }
    end,
    lib = function(name, extra) return M.fragment("lib/" .. name .. ".c.tmpl", plan, extra) end,
    family = function(name, extra) return M.fragment("families/" .. name .. ".c.tmpl", plan, extra) end,
  }
end

--- The "generated, do not edit" banner: template, reproducing command and
-- the config in full (after defaults), no date.
local function banner(tmpl, plan, command)
  local lines = {
    "/*",
    (" * Generated by attngen %s from templates/%s. Do not edit: regenerate with"):format(version.string, tmpl),
    " *   " .. command,
    " *",
    " * Config (after defaults):",
  }
  local kind = plan.config.kind or families.DEFAULT
  for _, k in ipairs(schema.order_of(kind)) do
    local v = plan.config[k]
    if v ~= nil then lines[#lines + 1] = (" *   %s = %s,"):format(k, util.serialize(v)) end
  end
  if not families.get(kind).tiled then
    lines[#lines + 1] = " * Tiles: none (the loops are blocked by the ISA's registers)."
  else
    lines[#lines + 1] = (" * Tile: q = %d, kv = %d (%s)."):format(plan.tile.q, plan.tile.kv, plan.tile_reason)
  end
  lines[#lines + 1] = " */"
  return table.concat(lines, "\n") .. "\n"
end

--- Renders one template for a plan; returns the text (raises on template bugs).
-- Fragments leave blank lines where a part is not generated: no more than
-- one blank line in a row is kept.
function M.render(tmpl, plan, command)
  local ct = load_template(tmpl)
  local out, err = ct:render(environment(plan))
  if not out then error(("templates/%s: %s"):format(tmpl, tostring(err)), 0) end
  out = out:gsub("\n\n\n+", "\n\n"):gsub("(\n[ ]*{\n)\n", "%1")
  return banner(tmpl, plan, command) .. out
end

--- The files of a kernel, from the templates of its family's direction
-- (`direction`, default "forward"): { {name=..., text=...}, ... }.
function M.kernel_files(plan, command, direction)
  local kind, name = plan.family or families.DEFAULT, direction or "forward"
  local d = families.direction(kind, name)
  if not d then error(("family %s has no direction '%s'"):format(kind, name), 0) end
  local t = d.templates
  return {
    { name = plan.name .. ".h", text = M.render(t.h, plan, command) },
    { name = plan.name .. ".c", text = M.render(t.c, plan, command) },
  }
end

return M
