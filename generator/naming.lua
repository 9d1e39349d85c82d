--- Names of generated functions.  The name is the spec (XNNPACK style):
-- operation and block shape before the double underscore, ISA after it.
--
--   attn_<config>_fwd                 entry point (validates, dispatches)
--   attn_<config>_fwd__<isa>          one ISA variant
--   attn_<config>_qk_<MR>x<NC>__<isa> scores micro-kernel: MR query rows x NC keys
--   attn_<config>_pv_<MR>x<DV>__<isa> P*V micro-kernel: MR rows x DV output columns
--   attn_<config>_kernel              the attn_kernel descriptor
local isa_registry = require("isa")

local M = {}

function M.entry(name) return ("attn_%s_fwd"):format(name) end
function M.kernel(name) return ("attn_%s_kernel"):format(name) end
function M.variant(name, isa) return ("attn_%s_fwd__%s"):format(name, isa) end
function M.qk(name, mr, nc, isa) return ("attn_%s_qk_%dx%d__%s"):format(name, mr, nc, isa) end
function M.pv(name, mr, dv, isa) return ("attn_%s_pv_%dx%d__%s"):format(name, mr, dv, isa) end

--- Parses a generated function name back into its parts:
-- { config=, op= "fwd"|"qk"|"pv"|"kernel", mr=, nc=, isa= } or nil.
function M.parse(fname)
  -- The ISA after "__" must be a known one: a config may be named like a
  -- kernel ("a_qk_1x2_" has the entry attn_a_qk_1x2__fwd, which is not a
  -- qk micro-kernel for an ISA "fwd").
  local cfg, isa = fname:match("^attn_([%w_]-)_fwd__(%w+)$")
  if cfg and isa_registry.known(isa) then return { config = cfg, op = "fwd", isa = isa } end
  local op, mr, nc
  cfg, op, mr, nc, isa = fname:match("^attn_([%w_]-)_(%a%a)_(%d+)x(%d+)__(%w+)$")
  if cfg and (op == "qk" or op == "pv") and isa_registry.known(isa) then
    return { config = cfg, op = op, mr = tonumber(mr), nc = tonumber(nc), isa = isa }
  end
  cfg = fname:match("^attn_([%w_]+)_fwd$")
  if cfg then return { config = cfg, op = "fwd" } end
  cfg = fname:match("^attn_([%w_]+)_kernel$")
  if cfg then return { config = cfg, op = "kernel" } end
  return nil
end

return M
