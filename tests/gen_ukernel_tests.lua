--- Writes the micro-kernel tests of one generated kernel (XNNPACK style):
--   lua tests/gen_ukernel_tests.lua GENERATED.c OUT.c
-- Every function GENERATED.c defines whose name parses (generator/naming.lua)
-- to an op marked micro = true gets a test: OUT.c #includes GENERATED.c (so
-- its static functions are callable) and hands each micro-kernel, with the
-- shape and the storage type (f32, bf16, f16) its name gives, to the tester
-- for its op (tests/ukernel.h, tests/ukernel.c); a qkdp kernel also
-- with the scale it bakes in, the float literal the comment above it prints
-- (checked to be the one its body uses).  The kernel is first
-- assigned to a variable of the type its op and storage type say (so the
-- compiler checks its signature), then handed over as a ukt_fn.  Each test
-- sits under its ISA's arch guard (the #if the generated code uses) and runs
-- only where attn_isa_supported() says the CPU runs the ISA; otherwise it is
-- reported as not run, with why.
-- OUT.c defines int ukernel_tests_<config>(int *passed, int *failed).
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path
local util = require("util")
util.root = root
local naming = require("naming")
local isas = require("isa")

local src_path, out_path = arg[1], arg[2]
if not (src_path and out_path) then
  io.stderr:write("usage: lua tests/gen_ukernel_tests.lua GENERATED.c OUT.c\n")
  os.exit(2)
end
local text = util.read_file(src_path)
if not text then
  io.stderr:write(("gen_ukernel_tests: cannot read %s\n"):format(src_path))
  os.exit(2)
end

local function fail(fmt, ...)
  io.stderr:write(("gen_ukernel_tests: %s: %s\n"):format(src_path, fmt:format(...)))
  os.exit(1)
end

--- The functions the text defines, in order: an attn_ name, its balanced
-- parameter list, then a body (a declaration or call is followed by
-- something else).  Also returns name -> where its definition lies: at (the
-- name's position), params (the text of its parameter list) and body (the
-- text of its braces).
local function defined_functions(src)
  local names, seen = {}, {}
  for pos, name in src:gmatch("()(attn_[%w_]+)%s*%(") do
    local open = src:find("(", pos + #name, true)
    local _, close = src:find("^%b()", open)
    local brace = close and select(2, src:find("^%s*{", close + 1))
    if brace and not seen[name] then
      local _, last = src:find("^%b{}", brace)
      seen[name] = { at = pos, params = src:sub(open, close), body = src:sub(brace, last or #src) }
      names[#names + 1] = name
    end
  end
  return names, seen
end

--- The comment that documents the function defined at pos: the last /* */
-- before it, with only its declaration's specifiers between (no ; or }).
local function doc_comment(src, pos)
  local head = src:sub(1, pos - 1)
  local open
  for at in head:gmatch("()/%*") do open = at end
  local close = open and head:find("*/", open, true)
  if not close or head:sub(close + 2):find("[;}{]") then return nil end
  return head:sub(open, close + 1)
end

--- C string literal of s
local function cstr(s)
  return '"' .. s:gsub('[\\"]', "\\%0") .. '"'
end

local function ceil_to(x, m) return math.ceil(x / m) * m end

--- qkdp's scale (scale * log2(e)), the float literal its file bakes in:
-- the one its comment prints ("C[M][N] = <literal> A[M][D] B[D][N]"),
-- which must also be the one its body multiplies by.
local function qkdp_scale(k, def)
  local doc = def and doc_comment(text, def.at)
  local m, n, lit = (doc or ""):match("C%[(%d+)%]%[(%d+)%] = ([%w%.%+%-]+) A%[")
  if not lit then
    fail("%s: no scale in the comment above it (\"C[%d][%d] = <scale> A[..] B[..]\", templates/lib/qk.c.tmpl)",
      k.name, k.m, k.n)
  end
  if tonumber(m) ~= k.m or tonumber(n) ~= k.n then
    fail("%s: its comment says C[%s][%s]", k.name, m, n)
  end
  if not tonumber((lit:gsub("[fF]$", ""))) then fail("%s: its scale %s is not a number", k.name, lit) end
  if not def.body:find(lit, 1, true) then
    fail("%s: its comment's scale %s is not in its body", k.name, lit)
  end
  return lit
end

--- The row width of the panel a qk or qkdp kernel reads B from (floats, or
-- pairs, per d), as the comment above it says ("(<n> floats per d" or
-- "rows of <n> pairs"): the kernel's N, or more for a narrow instance
-- (one vector of a wider panel, templates/lib/qk.c.tmpl).
local function panel_width(k, def)
  local doc = def and doc_comment(text, def.at) or ""
  local w = tonumber(doc:match("%((%d+) floats per d") or doc:match("rows of (%d+) pairs") or "")
  if not w then
    fail("%s: no panel width in the comment above it (\"(<n> floats per d\" or \"rows of <n> pairs\")", k.name)
  end
  if w < k.n then fail("%s: its comment's panel of %d columns is narrower than its %d", k.name, w, k.n) end
  return w
end

--- The rows to prefetch that a kernel takes (a last parameter pr: the decode
-- path's pv and qkpf kernels, templates/lib/pv.c.tmpl and qk.c.tmpl), as the
-- comment above it says: the count that `count` (a pattern, one capture)
-- finds, and the lines of a row ("<n> lines a row"); 0, 0 where it takes none.
local function prefetch_rows(k, def, count, says)
  if not (def and def.params:find("%*%s*pr%s*%)$")) then return 0, 0 end
  local doc = doc_comment(text, def.at) or ""
  local n, lpr = tonumber(doc:match(count) or ""), tonumber(doc:match("(%d+) lines a row") or "")
  if not (n and lpr) then
    fail("%s: takes pr, but the comment above it gives no \"%s\" and \"<n> lines a row\"", k.name, says)
  end
  return n, lpr
end

-- what each op's comment says of the rows it prefetches: a pv kernel its
-- chunks (the rows it reads follow from its key range), a qkpf kernel its rows
local SCORES_COUNT = { "pr: NULL, or (%d+) rows of the next block", "pr: NULL, or <n> rows of the next block" }
local PREFETCH_COUNT = {
  pv = { "(%d+) chunks? of jhi %- jlo keys", "<n> chunks of jhi - jlo keys" },
  qkpf = { "pr: (%d+) rows of the next block", "pr: <n> rows of the next block" },
  lanes = SCORES_COUNT, dpairs = SCORES_COUNT, hpairs = SCORES_COUNT,
}

--- The Q^T row width the lanes kernel reads (its panel's, "rows <n> floats
-- apart" in the comment above it).
local function lanes_stride(k, def)
  local doc = def and doc_comment(text, def.at) or ""
  local w = tonumber(doc:match("rows (%d+) floats apart") or "")
  if not w then fail("%s: no Q^T row width in the comment above it (\"rows <n> floats apart\")", k.name) end
  if w < k.isa.lanes then fail("%s: its comment's Q^T rows of %d floats hold less than a vector", k.name, w) end
  return w
end

--- The decode path's score kernels (lib/decode_scores.c.tmpl): rows a call
-- (lanes: a vector; dpairs: N half vectors; hpairs: a quarter vector), Q's
-- packing and its tester call.
local function scores_tester(k, rows, pairs, qs)
  return ("ukt_scores(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, D, %d, %d)"):format(cstr(k.name), k.dt, k.m, rows,
    pairs and 1 or 0, qs, k.pf_n, k.pf_lpr)
end

-- each micro op's call of its tester (tests/ukernel.h): the kernel k (a
-- parsed name plus name, isa, dt, its attn_dtype constant, and def, where
-- defined_functions found it), held in the variable fn, as a C expression;
-- D and DV are the generated file's enum constants (its head dims)
local TESTERS = {
  qk = function(k)
    return ("ukt_qk(%s, (ukt_fn)fn, %s, %d, %d, %d, D, 0, 0)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def))
  end,
  qkpf = function(k)
    return ("ukt_qk(%s, (ukt_fn)fn, %s, %d, %d, %d, D, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def), k.pf_n, k.pf_lpr)
  end,
  pv = function(k)
    return ("ukt_pv(%s, (ukt_fn)fn, %s, %d, %d, DV, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      ceil_to(k.n, k.isa.lanes), k.pf_n, k.pf_lpr)
  end,
  dot = function(k)
    if k.int8 then -- matmul = "int8": packed q8_0 rows, the plain form and the ISA's extension
      return ("ukt_idot(%s, (ukt_fn)fn, %s, %d, %d, D, (D + %d) / %d * %d, %s)"):format(cstr(k.name), k.dt, k.m, k.n,
        k.isa.lanes - 1, k.isa.lanes, k.isa.lanes, k.isa.int8 and k.isa.int8.dp_bit or "0")
    end
    return ("ukt_dot(%s, (ukt_fn)fn, %s, %d, %d, D, (D + %d) / %d * %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      k.isa.lanes - 1, k.isa.lanes, k.isa.lanes)
  end,
  lanes = function(k) return scores_tester(k, k.isa.lanes, false, lanes_stride(k, k.def)) end,
  dpairs = function(k) return scores_tester(k, k.n * math.floor(k.isa.lanes / 2), true, 0) end,
  hpairs = function(k) return scores_tester(k, math.floor(k.isa.lanes / 4), true, 0) end,
  qkdp = function(k)
    return ("ukt_qkdp(%s, (ukt_fn)fn, %s, %d, %d, %d, D, %s)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def), qkdp_scale(k, k.def))
  end,
  pvdp = function(k)
    return ("ukt_pvdp(%s, (ukt_fn)fn, %s, %d, %d, DV, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      ceil_to(k.n, k.isa.lanes))
  end,
}

-- the storage types an op's tester takes, where not all of DTYPES: the
-- pair dot products are bf16 throughout (vdpbf16ps), the prefetching scores
-- and the decode path's scores in pairs of D read an f32 cache
local OP_DTYPES = { qkdp = { bf16 = true }, pvdp = { bf16 = true }, qkpf = { f32 = true }, dpairs = { f32 = true },
  hpairs = { f32 = true } }

-- the storage types the testers take: name -> the attn_dtype constant and
-- the suffix of the kernel types (tests/ukernel.h: ukt_<op><suffix>_fn;
-- bf16 and f16 operands are uint16_t, q8_0 and q4_0 blocks)
local DTYPES = {
  f32 = { enum = "ATTN_DTYPE_F32", fn = "" },
  bf16 = { enum = "ATTN_DTYPE_BF16", fn = "16" },
  f16 = { enum = "ATTN_DTYPE_F16", fn = "16" },
  q8_0 = { enum = "ATTN_DTYPE_Q8_0", fn = "q8" }, -- llama.cpp's blocks: attn_block_q8_0, _q4_0
  q4_0 = { enum = "ATTN_DTYPE_Q4_0", fn = "q4" },
}

local config
local kernels = {}
local names, defs = defined_functions(text)
for _, name in ipairs(names) do
  local p = naming.parse(name)
  local spec = p and naming.OPS[p.op]
  if spec and spec.micro then
    if config and p.config ~= config then
      fail("micro-kernels of two configs: %s and %s", config, p.config)
    end
    config = p.config
    if not TESTERS[p.op] then fail("%s: no tester for op %s (tests/ukernel.c)", name, p.op) end
    if not spec.dtype then p.dtype = "f32" end -- no storage type in its name: f32 operands
    local dt = DTYPES[p.dtype]
    if not dt or (OP_DTYPES[p.op] and not OP_DTYPES[p.op][p.dtype]) then
      fail("%s: no tester for dtype %s (tests/ukernel.c)", name, tostring(p.dtype))
    end
    local isa, err = isas.get(p.isa)
    if not isa then fail("%s: %s", name, err) end
    p.name, p.isa, p.isa_name, p.def = name, isa, p.isa, defs[name]
    p.int8 = text:find('\n %*   matmul = "int8",\n') ~= nil -- integer block dots (the config's echo)
    p.dt, p.fn_type = dt.enum, ("ukt_%s%s_fn"):format(p.op, dt.fn)
    local count = PREFETCH_COUNT[p.op]
    if count then -- the rows to prefetch it takes (pf_n > 0), if any
      p.pf_n, p.pf_lpr = prefetch_rows(p, p.def, count[1], count[2])
      if p.op == "pv" and p.pf_n > 0 then p.fn_type = "ukt_pvpf_fn" end
      if count == SCORES_COUNT then
        p.fn_type = p.pf_n > 0 and "ukt_scorespf_fn" or ("ukt_scores%s_fn"):format(dt.fn)
      end
      if p.op == "qkpf" and p.pf_n == 0 then fail("%s: a qkpf kernel takes pr (its last parameter)", name) end
    end
    kernels[#kernels + 1] = p
  end
end
-- The classic kinds (additive, luong) run loops of their own, no micro-kernel
-- of the library (their kernel tests cover them): their file gets a test
-- function that records nothing, so that every test config's kernel is
-- built through its tests' file (the Makefile links that object into the
-- kernel tests too).  Any other kind without a micro-kernel is an error.
local CLASSIC = { additive = true, luong = true }
local kind = text:match('\n %*   kind = "(%w+)",\n')
if #kernels == 0 then
  if not CLASSIC[kind] then fail("no micro-kernel found (no defined function names parse to a micro op)") end
  config = text:match('\n %*   name = "([%w_]+)",\n')
  if not config then fail("a %s kernel without its config's name in its header comment", kind) end
end

local out = {}
local function add(fmt, ...) out[#out + 1] = select("#", ...) > 0 and fmt:format(...) or fmt end

local ops = {}
for op, spec in pairs(naming.OPS) do
  if spec.micro then ops[#ops + 1] = op end
end
table.sort(ops)
add("/* The micro-kernel tests of %s: generated by tests/gen_ukernel_tests.lua from", config)
add(" * %s (do not edit).  Each %s micro-kernel", src_path:match("[^/]+$"), table.concat(ops, ", "))
add(" * it defines (%d, found by parsing its symbol names) checked alone against", #kernels)
add(" * plain loops by the tester for its op (tests/ukernel.h). */")
add('#include "%s"', src_path:match("[^/]+$"))
add('#include "ukernel.h"')
add("")
add("int ukernel_tests_%s(int *passed, int *failed);", config)
add("")
for _, k in ipairs(kernels) do
  local guard = k.isa.arch_guard
  if guard then add("#if %s", guard) end
  add("/* %s, %dx%d, %s operands, %s (%d lanes) */", k.op, k.m, k.n, k.dtype, k.isa_name, k.isa.lanes)
  add("static int test_%s(const char **why)", k.name)
  add("{")
  add("    const %s fn = %s;", k.fn_type, k.name)
  add("    if (!attn_isa_supported(%s)) {", k.isa.enum)
  add("        *why = %s;", cstr("this CPU does not run " .. k.isa_name))
  add("        return UKT_NOT_RUN;")
  add("    }")
  add("    return %s;", TESTERS[k.op](k))
  add("}")
  if guard then add("#endif") end
  add("")
end
add("/* Runs every micro-kernel test; returns how many failed. */")
add("int ukernel_tests_%s(int *passed, int *failed)", config)
add("{")
if #kernels == 0 then
  add("    (void)passed; /* a %s kernel: no micro-kernel */", kind)
  add("    (void)failed;")
  add("    return 0;")
else
  add("    const int failed0 = *failed;")
  add("    const char *why = 0;")
  add("    int status;")
  for _, k in ipairs(kernels) do
    local guard = k.isa.arch_guard
    if guard then
      add("#if %s", guard)
      add("    status = test_%s(&why);", k.name)
      add("#else")
      add("    status = UKT_NOT_RUN;")
      add("    why = %s;", cstr(("not built for this architecture (%s needs %s)"):format(k.isa_name, guard)))
      add("#endif")
    else
      add("    status = test_%s(&why);", k.name)
    end
    add("    ukt_record(%s, %s, %s, status, why, passed, failed);", cstr(k.name), k.isa.enum, k.dt)
  end
  add("    return *failed - failed0;")
end
add("}")

local ok, err = util.write_atomic(out_path, table.concat(out, "\n") .. "\n")
if ok == nil then fail("cannot write %s: %s", out_path, tostring(err)) end
