--- Writes the micro-kernel tests of one generated kernel (XNNPACK style):
--   lua tests/gen_ukernel_tests.lua --list LIST GENERATED.c...
--   lua tests/gen_ukernel_tests.lua GENERATED.c OUT.c [LIST [--lean]]
-- Micro-kernels are named by their math (generator/naming.lua), so two
-- configs that need the same one define the same text under the same name
-- (tests/check_micro_kernels.lua checks it).  The first form writes the one
-- list that drives the tests: each distinct micro-kernel the files define
-- whose op is marked micro = true, once, with the config of the first file
-- (in the order given) that defines it ("<name> <config>" a line).  The
-- second tests the micro-kernels GENERATED.c defines that the list gives its
-- config (every one, without a list): OUT.c #includes GENERATED.c (so
-- its static functions are callable) and hands each micro-kernel, with the
-- shape, head dims and storage type (f32, bf16, f16, q8_0, q4_0) its name
-- gives, to the tester for its op (tests/ukernel.h, tests/ukernel.c); a
-- qkdp kernel also with a scale, its last argument.  The kernel is first
-- assigned to a variable of the type its op and storage type say (so the
-- compiler checks its signature), then handed over as a ukt_fn.  Each test
-- sits under its ISA's arch guard (the #if the generated code uses) and runs
-- only where attn_isa_supported() says the CPU runs the ISA; otherwise it is
-- reported as not run, with why.
-- OUT.c defines int ukernel_tests_<config>(int *passed, int *failed).
-- --lean (a preset's tests, make test-full): where the list gives the file
-- nothing to test, OUT.c does not #include it either (its object is no
-- config's kernel, so there is nothing to compile).
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path
local util = require("util")
util.root = root
local naming = require("naming")
local isas = require("isa")

local USAGE = "usage: lua tests/gen_ukernel_tests.lua --list LIST GENERATED.c...\n"
  .. "       lua tests/gen_ukernel_tests.lua GENERATED.c OUT.c [LIST [--lean]]\n"
local list_mode = arg[1] == "--list"
local src_path, out_path, list_path = arg[1], arg[2], arg[3]
local lean = not list_mode and arg[4] == "--lean"
if list_mode then src_path, out_path, list_path = arg[3], nil, arg[2] end
if not (src_path and (out_path or list_mode)) then
  io.stderr:write(USAGE)
  os.exit(2)
end

local function fail(fmt, ...)
  io.stderr:write(("gen_ukernel_tests: %s: %s\n"):format(src_path, fmt:format(...)))
  os.exit(1)
end

--- path's text, or a failure
local function read(path)
  local t = util.read_file(path)
  if not t then
    io.stderr:write(("gen_ukernel_tests: cannot read %s\n"):format(path))
    os.exit(2)
  end
  return t
end

--- Writes text to path unless it holds it already (so that make does not
-- compile an unchanged test again).
local function write_if_changed(path, text)
  if util.read_file(path) == text then return end
  local ok, err = util.write_atomic(path, text)
  if ok == nil then fail("cannot write %s: %s", path, tostring(err)) end
end

--- The config a generated file is of: its header comment's echo.
local function config_of(src)
  return src:match('\n %*   name = "([%w_]+)",\n')
end

--- The micro-kernels (micro = true, named by their math) that the text
-- defines, in order: a list of names.
local function micro_names(src)
  local out, seen = {}, {}
  for name in src:gmatch("static[^;{}\n]-[%s%*](attn_[%w_]+)%(") do
    local p = naming.parse(name)
    if p and not p.config and naming.OPS[p.op] and naming.OPS[p.op].micro and not seen[name] then
      seen[name], out[#out + 1] = true, name
    end
  end
  return out
end

if list_mode then -- the one list: each micro-kernel once, with the first config that defines it
  local lines, owner = {}, {}
  for i = 3, #arg do
    src_path = arg[i]
    local src = read(src_path)
    local config = config_of(src) or fail("no config name in its header comment")
    for _, name in ipairs(micro_names(src)) do
      if not owner[name] then
        owner[name] = config
        lines[#lines + 1] = name .. " " .. config
      end
    end
  end
  write_if_changed(list_path, table.concat(lines, "\n") .. "\n")
  os.exit(0)
end

local text = read(src_path)

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

-- the scale a qkdp kernel's test hands it (its last argument): 1 / sqrt(64)
-- times log2(e), a scale the prefill path passes
local QKDP_SCALE = "0.180336880f"

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
  if w ~= k.panel then fail("%s: its comment's panel of %d columns is not its name's %d", k.name, w, k.panel) end
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
  if w ~= k.panel then fail("%s: its comment's Q^T rows of %d floats are not its name's %d", k.name, w, k.panel) end
  return w
end

--- The decode path's score kernels (lib/decode_scores.c.tmpl): rows a call
-- (lanes: a vector; dpairs: N half vectors; hpairs: a quarter vector), Q's
-- packing and its tester call.
local function scores_tester(k, rows, pairs, qs)
  return ("ukt_scores(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, rows,
    pairs and 1 or 0, qs, k.d, k.pf_n, k.pf_lpr)
end

-- each micro op's call of its tester (tests/ukernel.h): the kernel k (a
-- parsed name plus name, isa, dt, its attn_dtype constant, and def, where
-- defined_functions found it), held in the variable fn, as a C expression;
-- the head dims are the name's (d: D; Dv: N of pv and pvdp)
local TESTERS = {
  qk = function(k)
    return ("ukt_qk(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, 0, 0)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def), k.d)
  end,
  qkpf = function(k)
    return ("ukt_qk(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def), k.d, k.pf_n, k.pf_lpr)
  end,
  pv = function(k)
    return ("ukt_pv(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n, k.n,
      ceil_to(k.n, k.isa.lanes), k.pf_n, k.pf_lpr)
  end,
  dot = function(k)
    if k.int8 then -- matmul = "int8": packed q8_0 rows, the plain form and the ISA's extension
      return ("ukt_idot(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %s)"):format(cstr(k.name), k.dt, k.m, k.n, k.d,
        ceil_to(k.d, k.isa.lanes), k.isa.int8 and k.isa.int8.dp_bit or "0")
    end
    return ("ukt_dot(%s, (ukt_fn)fn, %s, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n, k.d,
      ceil_to(k.d, k.isa.lanes))
  end,
  lanes = function(k) return scores_tester(k, k.isa.lanes, false, lanes_stride(k, k.def)) end,
  dpairs = function(k) return scores_tester(k, k.n * math.floor(k.isa.lanes / 2), true, 0) end,
  hpairs = function(k) return scores_tester(k, math.floor(k.isa.lanes / 4), true, 0) end,
  qkdp = function(k)
    return ("ukt_qkdp(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %s)"):format(cstr(k.name), k.dt, k.m, k.n,
      panel_width(k, k.def), k.d, QKDP_SCALE)
  end,
  -- the streaming steps, through the wrapper wrap_step writes (weights in four-float registers)
  spv = function(k)
    return ("ukt_spvk(%s, (ukt_fn)fn, %s, %d, 1, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      ceil_to(k.n, k.isa.lanes))
  end,
  spvk = function(k)
    return ("ukt_spvk(%s, (ukt_fn)fn, %s, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n, k.v,
      ceil_to(k.v, k.isa.lanes))
  end,
  srescale = function(k)
    return ("ukt_spvk(%s, (ukt_fn)fn, %s, %d, 0, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n,
      ceil_to(k.n, k.isa.lanes))
  end,
  supd = function(k)
    return ("ukt_supd(%s, (ukt_fn)fn, %d, %d, %d)"):format(cstr(k.name), k.m, k.v, ceil_to(k.v, k.isa.lanes))
  end,
  sqk = function(k)
    return ("ukt_sqk(%s, (ukt_fn)fn, %s, %d, %d, %d, %d, %d, %d, %d, %d, %s)"):format(cstr(k.name), k.dt, k.m, k.n,
      k.d, ceil_to(k.d, k.isa.lanes), k.v, ceil_to(k.v, k.isa.lanes), k.sc and 1 or 0, k.int8 and 1 or 0,
      k.int8 and k.isa.int8 and k.isa.int8.dp_bit or "0")
  end,
  qpackdp = function(k)
    return ("ukt_qpackdp(%s, (ukt_fn)fn, %s, %d, %d)"):format(cstr(k.name), k.dt, k.n, k.d)
  end,
  -- the block step's scores: the dot tester, through a wrapper of its type
  sqbdot = function(k)
    return ("ukt_dot(%s, (ukt_fn)fn, %s, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n, k.d,
      ceil_to(k.d, k.isa.lanes))
  end,
  pvdp = function(k)
    return ("ukt_pvdp(%s, (ukt_fn)fn, %s, %d, %d, %d, %d)"):format(cstr(k.name), k.dt, k.m, k.n, k.n,
      ceil_to(k.n, k.isa.lanes))
  end,
}

-- the storage types an op's tester takes, where not all of DTYPES: the
-- pair dot products are bf16 throughout (vdpbf16ps), the prefetching scores
-- and the decode path's scores in pairs of D read an f32 cache
local OP_DTYPES = { qkdp = { bf16 = true }, pvdp = { bf16 = true }, qkpf = { f32 = true }, dpairs = { f32 = true },
  hpairs = { f32 = true }, srescale = { f32 = true }, supd = { f32 = true }, sqbdot = { q8_0 = true, q4_0 = true },
  qpackdp = { bf16 = true } }

-- the C types of V rows a streaming step's wrapper hands it
local CTYPES = { f32 = "float", bf16 = "uint16_t", f16 = "uint16_t", q8_0 = "attn_block_q8_0",
  q4_0 = "attn_block_q4_0" }

--- The streaming steps (spv, spvk, srescale) take four-float registers:
-- the C text of a function of the tester's type (ukt_spvk_fn) that loads
-- the weights into them and calls kernel k, under its ISA's target.
local function wrap_step(k)
  local q4, isa = k.isa.q4, k.isa
  if not q4 then fail("%s: a streaming step on an ISA without four-float registers", k.name) end
  local attr = isa.target and ('__attribute__((target("%s"))) '):format(isa.target)
    or (isa.attr and isa.attr .. " " or "")
  local t = { ("%sstatic void wrap_%s(const float *w, const void *const *v, float *o)"):format(attr, k.name), "{" }
  local VT = "const " .. CTYPES[k.dtype] .. " *"
  if k.op == "srescale" then
    t[#t + 1] = "    (void)v;"
    t[#t + 1] = ("    %s(o, %s);"):format(k.name, q4.load("w"))
  elseif k.op == "spv" then
    t[#t + 1] = ("    %s(%s, (%s)v[0], o);"):format(k.name, q4.load("w"), VT)
  else
    local ws, vs = {}, {}
    for i = 0, k.n - 1 do
      ws[#ws + 1] = q4.load(("w + %d"):format(4 * i))
      vs[#vs + 1] = ("(%s)v[%d]"):format(VT, i)
    end
    t[#t + 1] = ("    const %s wq[%d] = { %s };"):format(q4.vec, k.n, table.concat(ws, ", "))
    t[#t + 1] = ("    %s(wq, %s, o);"):format(k.name, table.concat(vs, ", "))
  end
  t[#t + 1] = "}"
  return table.concat(t, "\n")
end
local STEPS = { spv = true, spvk = true, srescale = true }

--- The function attribute of kernel k's ISA, with a space, or "".
local function target_of(k)
  local isa = k.isa
  return isa.target and ('__attribute__((target("%s"))) '):format(isa.target) or (isa.attr and isa.attr .. " " or "")
end

--- The streaming decode's softmax step (supd), its score steps (sqk) and the
-- block step's scores (sqbdot), wrapped in their tester's type as the P*V
-- steps are (ukernel.h: ukt_supd_fn, ukt_sqk_fn, the dot type).
local function wrap_score(k)
  local q4 = k.isa.q4
  if not q4 then fail("%s: a streaming step on an ISA without four-float registers", k.name) end
  local KT = "const " .. CTYPES[k.dtype] .. " *"
  local t = {}
  local function add(fmt, ...) t[#t + 1] = fmt:format(...) end
  if k.op == "supd" then
    add("%sstatic void wrap_%s(const float *s, float *m, float *l, float *o, float *pend, int npend, float *w)",
      target_of(k), k.name)
    add("{")
    add("    %s p[%d];", q4.vec, 8)
    add("    int i;")
    add("    for (i = 0; i < npend; i++) p[i] = %s;", q4.load("pend + 4 * i"))
    add("    %s;", q4.store("w", ("%s(%s, m, l, o, p, npend)"):format(k.name, q4.load("s"))))
    add("    for (i = 0; i < npend; i++) %s;", q4.store("pend + 4 * i", "p[i]"))
  elseif k.op == "sqk" then
    add("%sstatic void wrap_%s(const float *q, const void *const *k, int terms, const float *th, float *m,",
      target_of(k), k.name)
    add("        float *l, float *o, float *w, float cap, float icap)")
    add("{")
    local caps = k.sc and ", cap, icap" or ""
    if not k.sc then add("    (void)cap;") add("    (void)icap;") end
    if k.n == 1 then
      add("    if (terms) %s;", q4.store("w", ("%s(q, (%s)k[0], 1, %s, %s, m, l, o%s)"):format(k.name, KT,
        q4.load("th"), q4.load("th + 4"), caps)))
      add("    else %s;", q4.store("w", ("%s(q, (%s)k[0], 0, %s, %s, m, l, o%s)"):format(k.name, KT, q4.zero(),
        q4.zero(), caps)))
    else
      local ks = {}
      for i = 0, k.n - 1 do ks[#ks + 1] = ("(%s)k[%d]"):format(KT, i) end
      add("    %s wq[%d];", q4.vec, k.n)
      add("    int i;")
      add("    (void)terms; /* the several-key steps take no terms */")
      add("    (void)th;")
      add("    %s(q, %s, m, l, o, wq%s);", k.name, table.concat(ks, ", "), caps)
      add("    for (i = 0; i < %d; i++) %s;", k.n, q4.store("w + 4 * i", "wq[i]"))
    end
  else -- sqbdot: m rows a call, 4 lanes a key (0 past the rows: a lane that is not makes a NaN score)
    add("%sstatic void wrap_%s(const float *q, int64_t R, %sk0, %sk1, float *s0, float *s1)", target_of(k), k.name,
      KT, KT)
    add("{")
    add("    int64_t r;")
    add("    for (r = 0; r < R; r += %d) {", k.m)
    add("        float t0[4], t1[4];")
    add("        int i;")
    add("        %s(q + r * %d, k0, k1, t0, t1);", k.name, ceil_to(k.d, k.isa.lanes))
    add("        for (i = 0; i < %d; i++) {", k.m)
    add("            s0[r + i] = t0[i];")
    add("            s1[r + i] = t1[i];")
    add("        }")
    add("        for (; i < 4; i++)")
    add("            if (t0[i] != 0.0f || t1[i] != 0.0f) s0[r] = NAN;")
    add("    }")
  end
  add("}")
  return table.concat(t, "\n")
end
local SCORE_STEPS = { supd = "ukt_supd_fn", sqk = "ukt_sqk_fn", sqbdot = true }

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

local config = config_of(text) or fail("no config name in its header comment")
-- the list's owner of each micro-kernel: those of other configs are tested there
local owner
if list_path then
  owner = {}
  for name, cfg in read(list_path):gmatch("([%w_]+) ([%w_]+)\n") do owner[name] = cfg end
end
local kernels, defined = {}, 0
local names, defs = defined_functions(text)
for _, name in ipairs(names) do
  local p = naming.parse(name)
  local spec = p and naming.OPS[p.op]
  if spec and spec.micro then
    if p.config then fail("%s: a micro-kernel named by its config, not its math", name) end
    defined = defined + 1
    if owner and not owner[name] then fail("%s: not in %s", name, list_path) end
  end
  if spec and spec.micro and (not owner or owner[name] == config) then
    if not TESTERS[p.op] then fail("%s: no tester for op %s (tests/ukernel.c)", name, p.op) end
    local dt = DTYPES[p.dtype]
    if not dt or (OP_DTYPES[p.op] and not OP_DTYPES[p.op][p.dtype]) then
      fail("%s: no tester for dtype %s (tests/ukernel.c)", name, tostring(p.dtype))
    end
    local isa, err = isas.get(p.isa)
    if not isa then fail("%s: %s", name, err) end
    p.name, p.isa, p.isa_name, p.def = name, isa, p.isa, defs[name]
    local fields = {}
    for _, f in ipairs(p.fields or {}) do -- p<n>: fields.p = n; pf, i8: true
      local n = f:match("^p(%d+)$")
      if n then fields.p = tonumber(n) else fields[f] = true end
    end
    p.int8 = fields.i8 == true -- integer block dots of q8_0 query rows
    p.panel = fields.p or p.n -- the packed panel's row stride (qk, qkdp, lanes)
    p.dt, p.fn_type = dt.enum, ("ukt_%s%s_fn"):format(p.op, dt.fn)
    p.callee = name
    if STEPS[p.op] then p.fn_type, p.callee = "ukt_spvk_fn", "wrap_" .. name end
    if SCORE_STEPS[p.op] then
      p.callee = "wrap_" .. name
      p.fn_type = SCORE_STEPS[p.op] == true and ("ukt_dot%s_fn"):format(dt.fn) or SCORE_STEPS[p.op]
    end
    p.sc = fields.sc == true -- softcapped scores: the cap and its inverse, the last arguments (sqk)
    local count = PREFETCH_COUNT[p.op]
    if count then -- the rows to prefetch it takes (pf_n > 0), if any
      p.pf_n, p.pf_lpr = prefetch_rows(p, p.def, count[1], count[2])
      if p.op == "pv" and p.pf_n > 0 then p.fn_type = "ukt_pvpf_fn" end
      if count == SCORES_COUNT then
        p.fn_type = p.pf_n > 0 and "ukt_scorespf_fn" or ("ukt_scores%s_fn"):format(dt.fn)
      end
      if p.op == "qkpf" and p.pf_n == 0 then fail("%s: a qkpf kernel takes pr (its last parameter)", name) end
      if p.op ~= "qkpf" and (p.pf_n > 0) ~= (fields.pf == true) then
        fail("%s: its name's pf field and its parameters disagree on pr", name)
      end
    end
    kernels[#kernels + 1] = p
  end
end
-- The classic kinds (additive, luong) run loops of their own, no micro-kernel
-- of the library (their kernel tests cover them): their file gets a test
-- function that records nothing, so that every test config's kernel is
-- built through its tests' file (the Makefile links that object into the
-- kernel tests too).  Any other kind without a micro-kernel is an error; a
-- file whose micro-kernels the list gives other configs tests none either.
local CLASSIC = { additive = true, luong = true }
local kind = text:match('\n %*   kind = "(%w+)",\n')
if defined == 0 and not CLASSIC[kind] then
  fail("no micro-kernel found (no defined function names parse to a micro op)")
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
add(" * it defines (found by parsing its symbol names) that %s gives this config (%d of %d:",
  list_path and "the list" or "no list", #kernels, defined)
add(" * each is tested with the first config that defines it) checked alone against plain")
add(" * loops by the tester for its op (tests/ukernel.h). */")
if lean and #kernels == 0 then
  add("/* (its kernels are all tested with other configs: %s is not included) */", src_path:match("[^/]+$"))
  add('#include "ukernel.h"')
else
  add('#include "%s"', src_path:match("[^/]+$"))
  add('#include "ukernel.h"')
end
add("")
add("int ukernel_tests_%s(int *passed, int *failed);", config)
add("")
for _, k in ipairs(kernels) do
  local guard = k.isa.arch_guard
  if guard then add("#if %s", guard) end
  add("/* %s, %dx%d, %s operands, %s (%d lanes) */", k.op, k.m, k.n, k.dtype, k.isa_name, k.isa.lanes)
  if STEPS[k.op] then add("%s", wrap_step(k)) end
  if SCORE_STEPS[k.op] then add("%s", wrap_score(k)) end
  add("static int test_%s(const char **why)", k.name)
  add("{")
  add("    const %s fn = %s;", k.fn_type, k.callee)
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
  add("    (void)passed; /* %s */",
    defined == 0 and ("a " .. kind .. " kernel: no micro-kernel") or "each tested with another config")
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

write_if_changed(out_path, table.concat(out, "\n") .. "\n")
