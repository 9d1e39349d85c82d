--- Portable C spelling of the ISA interface: a "vector" is one float.
local M = {
  name = "scalar",
  enum = "ATTN_ISA_SCALAR",
  lanes = 1,
  regs = 16,
  -- micro-kernel blocking: scores MR x NR vectors, P*V MR x NVC vectors;
  -- enough independent sums for a compiler to schedule, within 16 registers
  qk_block = { mr = 4, nr = 2 },
  pv_block = { mr = 4, nvc = 2 },
  -- the classic families' loops (planner/classic.lua): the compiler keeps the registers
  classic_block = { mr = 4, nb = 4, ks = 4, ch = 8 },
  vec = "float",
  int8 = { style = "scalar" }, -- matmul = "int8" (isa/int8.lua): integer block dots in plain C
  arch_guard = nil, -- every target
  include = nil,
  target = nil,
  libm = true,      -- exp2 and tanh come from <math.h>
  -- gcc 12's -O2 auto-vectorizer turns the P*V row loop of this variant into
  -- paired loads that read one row past V (a guard-page test catches it);
  -- the variant is plain C, so it opts out of that pass
  attr = "ATTN_NO_AUTOVEC",
  defines = [[
#if defined(__GNUC__) && !defined(__clang__)
#define ATTN_NO_AUTOVEC __attribute__((optimize("no-tree-vectorize")))
#else
#define ATTN_NO_AUTOVEC
#endif]],
}

function M.zero() return "0.0f" end
function M.set1(x) return ("(%s)"):format(x) end
function M.load(p) return ("*(%s)"):format(p) end
function M.store(p, v) return ("*(%s) = %s"):format(p, v) end
function M.loadn() error("scalar vectors have no tail", 2) end
-- Storage types (isa/init.lua, "Storage types"): one value at a time,
-- through the file's scalar conversions (templates/lib/convert.c.tmpl).
M.storage = {}
for _, dt in ipairs({ "bf16", "f16" }) do
  local widen, narrow = "attn_widen_" .. dt .. "__scalar", "attn_narrow_" .. dt .. "__scalar"
  M.storage[dt] = {
    load_from = function(p) return ("%s(*(%s))"):format(widen, p) end,
    set1_from = function(x) return ("%s(%s)"):format(widen, x) end,
    store_to = function(p, v) return ("*(%s) = %s(%s)"):format(p, narrow, v) end,
  }
end
function M.storen() error("scalar vectors have no tail", 2) end
function M.add(a, b) return ("(%s + %s)"):format(a, b) end
function M.sub(a, b) return ("(%s - %s)"):format(a, b) end
function M.mul(a, b) return ("(%s * %s)"):format(a, b) end
function M.div(a, b) return ("(%s / %s)"):format(a, b) end
function M.fma(a, b, c) return ("(%s * %s + %s)"):format(a, b, c) end
-- Same NaN rule as the x86 instructions: b wins when either is NaN.  The
-- operands are evaluated twice, so callers pass side-effect-free expressions.
function M.max(a, b) return ("(%s > %s ? %s : %s)"):format(a, b, a, b) end
function M.min(a, b) return ("(%s < %s ? %s : %s)"):format(a, b, a, b) end
function M.select_lt(a, b, x, y) return ("((%s < %s) ? %s : %s)"):format(a, b, x, y) end
function M.iota() return "0.0f" end
function M.reduce_add(v) return v end
function M.reduce_max(v) return v end
function M.hsum4(a, b, c, d, out)
  return ("(%s)[0] = %s, (%s)[1] = %s, (%s)[2] = %s, (%s)[3] = %s"):format(out, a, out, b, out, c, out, d)
end
function M.exp2(v) return ("exp2f(%s)"):format(v) end
function M.tanh(v) return ("tanhf(%s)"):format(v) end
return M
