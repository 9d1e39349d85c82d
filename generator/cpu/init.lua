--- The CPU profiles: the per-CPU choices the runtime makes for the kernels
-- (how the decode path prefetches, which of its kernels takes how many
-- rows, whether vdpbf16ps products are worth dispatching to) and the cache
-- sizes, one module per CPU target (generator/cpu/<name>.lua), as BLIS
-- keeps one config/<arch> per CPU.  The kernels hold every path for every
-- CPU; the runtime picks a profile once per process (attn_cpu() in
-- runtime/attn_runtime.c) from the table this module renders into
-- runtime/attn_cpu_profiles.h (scripts/gen_cpu_profiles.lua, checked fresh by
-- tests/check_generated.sh).  docs/architecture.md, "CPU profiles".
--
-- A module is a table with every field of M.FIELDS, and `match`: which CPUs
-- it is for, every key optional (absent: any):
--   vendor   cpuid's vendor string ("AuthenticAMD", "GenuineIntel")
--   family   { lowest, highest } cpuid display family (base + extended)
--   model    { lowest, highest } cpuid display model
--   isa      an ISA (generator/isa/init.lua) the CPU and OS must run
-- Each choice carries the measurement that justifies it as a comment.
local M = {}

--- The profiles, first match first; the last one, generic, matches every CPU.
M.order = { "zen5", "zen4", "intel", "generic" }

local PREFETCH = { none = "ATTN_PREFETCH_NONE", l1 = "ATTN_PREFETCH_L1", l2 = "ATTN_PREFETCH_L2" }
local function is_bool(x) return type(x) == "boolean" end
local function is_bytes(x) return type(x) == "number" and x >= 1024 and x % 1024 == 0 end
local function is_rows(x) return type(x) == "number" and x >= 0 and x <= 4 and x % 1 == 0 end

--- Every field of a profile: its name, its check, the C value of a valid
-- value, and what it is (the comment of attn_cpu_profile's field).
M.FIELDS = {
  { "name", function(x) return type(x) == "string" and x:match("^[%l%d_]+$") ~= nil end,
    function(x) return ('"%s"'):format(x) end, "the profile's name (its module)" },
  { "what", function(x) return type(x) == "string" and not x:find("[*/\"\\]") end, nil,
    "the CPUs it is for, in words" },
  { "l1d_bytes", is_bytes, tostring, "L1 data cache of a core, where the OS does not say" },
  { "l2_bytes", is_bytes, tostring, "L2 cache of a core, where the OS does not say" },
  { "decode_prefetch", function(x) return PREFETCH[x] ~= nil end, function(x) return PREFETCH[x] end,
    "the blocked decode kernel's prefetch of its next block: none, into L1 or into L2" },
  { "decode_key_pairs", is_bool, function(x) return x and "1" or "0" end,
    "the streaming decode kernel reads an f32 cache two keys a step" },
  { "decode_even_rows", is_bool, function(x) return x and "1" or "0" end,
    "the blocked decode kernel splits rows of two P*V calls in even halves" },
  { "decode_half_pairs", is_bool, function(x) return x and "1" or "0" end,
    "the blocked decode kernel scores up to a quarter vector of rows in half-width pairs" },
  { "decode_stream_rows", is_rows, tostring, "the most rows a kv head the streaming decode kernel takes" },
  { "decode_stream_rows_half_pairs", is_rows, tostring,
    "the same where the blocked kernel scores in half-width pairs (and decode_half_pairs is on)" },
  { "bf16_dot", is_bool, function(x) return x and "1" or "0" end,
    "the dispatch takes an avx512bf16 variant (vdpbf16ps) over an avx512 one" },
}

local function check_match(name, m)
  if type(m) ~= "table" then error(("CPU profile '%s': match must be a table"):format(name)) end
  for k, v in pairs(m) do
    if k == "vendor" then
      if type(v) ~= "string" or #v ~= 12 then
        error(("CPU profile '%s': match.vendor must be cpuid's 12-character vendor string"):format(name))
      end
    elseif k == "family" or k == "model" then
      if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" or v[1] < 0 or v[1] > v[2]
        or v[2] > 0xfff then
        error(("CPU profile '%s': match.%s must be { lowest, highest }"):format(name, k))
      end
    elseif k == "isa" then
      local ok = false
      for _, n in ipairs(require("isa").order) do ok = ok or n == v end
      if not ok then error(("CPU profile '%s': match.isa '%s' is not an ISA"):format(name, tostring(v))) end
    else
      error(("CPU profile '%s': unknown match key '%s'"):format(name, tostring(k)))
    end
  end
end

--- Checks a profile module: every field, valid; nothing else.  Raises.
function M.check(p)
  local name = type(p) == "table" and tostring(p.name) or "?"
  if type(p) ~= "table" then error("a CPU profile must be a table") end
  local known = { match = true }
  for _, f in ipairs(M.FIELDS) do
    known[f[1]] = true
    if p[f[1]] == nil then error(("CPU profile '%s' lacks %s"):format(name, f[1])) end
    if not f[2](p[f[1]]) then
      error(("CPU profile '%s': %s = %s is not valid"):format(name, f[1], tostring(p[f[1]])))
    end
  end
  for k in pairs(p) do
    if not known[k] then error(("CPU profile '%s': unknown field '%s'"):format(name, tostring(k))) end
  end
  check_match(name, p.match)
  return p
end

local cache = {}

--- The module of a profile, checked, or nil and an error.
function M.get(name)
  if cache[name] then return cache[name] end
  local known = false
  for _, n in ipairs(M.order) do known = known or n == name end
  if not known then
    return nil, ("unknown CPU profile '%s' (known: %s)"):format(tostring(name), table.concat(M.order, ", "))
  end
  local p = M.check(require("cpu." .. name))
  if p.name ~= name then error(("CPU profile module '%s' names itself '%s'"):format(name, p.name)) end
  cache[name] = p
  return p
end

--- Every profile, in M.order.
function M.all()
  local t = {}
  for i, n in ipairs(M.order) do t[i] = assert(M.get(n)) end
  return t
end

--- The profile of the CPUs no other profile matches (its cache sizes are
-- the generator's own guess where the OS does not tell them).
function M.generic() return assert(M.get("generic")) end

M.HEADER_PATH = "runtime/attn_cpu_profiles.h"

--- Designated initializers, broken into lines of at most 100 characters.
local function wrap_fields(parts, indent)
  local lines, line = {}, indent
  for i, part in ipairs(parts) do
    part = part .. (i < #parts and "," or "")
    if line ~= indent and #line + 1 + #part > 100 then
      lines[#lines + 1] = line
      line = indent .. part
    else
      line = line == indent and line .. part or line .. " " .. part
    end
  end
  lines[#lines + 1] = line
  return lines
end

local function c_entry(p)
  local m = p.match
  local fam, mod = m.family or { 0, 0xfff }, m.model or { 0, 0xfff }
  local parts = {
    (".vendor = %s"):format(m.vendor and ('"' .. m.vendor .. '"') or "NULL"),
    (".family_lo = 0x%x"):format(fam[1]), (".family_hi = 0x%x"):format(fam[2]),
    (".model_lo = 0x%x"):format(mod[1]), (".model_hi = 0x%x"):format(mod[2]),
    (".isa = %s"):format(m.isa and ("ATTN_ISA_" .. m.isa:upper()) or "-1"),
  }
  for _, f in ipairs(M.FIELDS) do
    if f[3] then parts[#parts + 1] = (".%s = %s"):format(f[1], f[3](p[f[1]])) end
  end
  return wrap_fields(parts, "      ")
end

--- The text of runtime/attn_cpu_profiles.h: the table attn_cpu() picks from.
function M.render_header()
  local all = M.all()
  if next(all[#all].match) ~= nil then error("the last CPU profile must match every CPU") end
  local out = {
    "/*",
    " * attn_cpu_profiles.h - the CPU profiles attn_cpu() picks from, first match",
    " * first.  Generated from generator/cpu/NAME.lua by scripts/gen_cpu_profiles.lua",
    " * (make cpu-profiles); do not edit: a new CPU is a new module there.",
    " * Included by attn_runtime.c only.",
    " */",
    "#ifndef ATTN_CPU_PROFILES_H",
    "#define ATTN_CPU_PROFILES_H",
    "",
    "typedef struct attn_cpu_entry {",
    "    /* which CPUs: cpuid's vendor string (NULL: any), display family and",
    "       model ranges, an attn_isa the CPU must run (-1: none) */",
    "    const char *vendor;",
    "    int family_lo, family_hi, model_lo, model_hi, isa;",
  }
  for _, f in ipairs(M.FIELDS) do
    if f[3] then
      out[#out + 1] = ("    /* %s */"):format(f[4])
      out[#out + 1] = ("    %s%s;"):format(f[1] == "name" and "const char *" or "int ", f[1])
    end
  end
  out[#out + 1] = "} attn_cpu_entry;"
  out[#out + 1] = ""
  out[#out + 1] = "static const attn_cpu_entry attn_cpu_profiles[] = {"
  for i, p in ipairs(all) do
    out[#out + 1] = ("    /* %s: generator/cpu/%s.lua */"):format(p.what, p.name)
    out[#out + 1] = "    {"
    for _, l in ipairs(c_entry(p)) do out[#out + 1] = l end
    out[#out + 1] = "    }" .. (i < #all and "," or "")
  end
  out[#out + 1] = "};"
  out[#out + 1] = ""
  out[#out + 1] = "#endif /* ATTN_CPU_PROFILES_H */"
  return table.concat(out, "\n") .. "\n"
end

return M
