--- The kernel families: one table per family (families/<kind>.lua), and
-- this registry, the one place that knows which families exist.
--
-- A family table names everything the generator and its commands ask of a
-- family: the modules of its schema and planner, the templates of each
-- direction, its vendoring description, the test sets' view of its configs
-- (check), its tuning candidates (tune), its benchmark and plot behaviour,
-- and why a command has nothing to do for it (unsupported).  Code outside
-- the family modules asks the table (a field or a function) instead of
-- testing the kind; docs/architecture.md ("Families") lists the fields.
--
-- The modules are plain data and functions that require nothing at load
-- time (the schema and planner modules are named, and required on use), so
-- the schema, the planner and tests/kernel_sets.lua can all require this
-- registry.
local M = {}

--- The kind of a config without a `kind` key.
M.DEFAULT = "sdpa"

--- The families, in the order the schema lists them.
M.names = { "sdpa", "linear", "additive", "luong" }

--- The fields every family table has, and what each holds.
M.FIELDS = {
  name = "the kind, as configs spell it",
  noun = "what the family computes, in messages (\"linear attention\")",
  schema = "its schema module: keys, types, ranges, defaults",
  planner = "its planner module: paths, masks, constants",
  matmuls = "the product types (config key matmul) it computes in",
  tiled = "whether its kernels are blocked by a tile {q, kv}",
  args = "the C struct its entry points take (attn_args, attn_classic_args)",
  directions = "per direction (forward; sdpa's backward): its templates",
  vendor = "describe(plan): what a vendored folder says of a kernel",
  check = "the test sets' view of a raw config: required keys, shape, features",
  tune = "buckets tuned and, optionally, the family's own grid and a note",
  bench = "what the benchmark suite asks of its presets",
  memory = "what decoding keeps per sequence and layer: kv_cache, state or encoder_states",
  unsupported = "per command (tune, plot_mask): why it has nothing to do",
}

--- Fields a family table may add for its own planner: the classic kinds'
-- `classic` = { score = function(cfg), the score it computes; spec_family,
-- its attn_family enum } (planner/classic.lua plans both).
M.OPTIONAL_FIELDS = {
  classic = "what planner/classic.lua asks of the kind: score(cfg), spec_family",
  kv_blocks = "llama.cpp's block types its K/V may be stored in (dtype.kv = \"q8_0\", \"q4_0\")",
}

--- The commands that may have nothing to do for a family (unsupported.<command>).
M.COMMANDS = { "tune", "plot_mask" }

--- The fields of a direction (directions.<name>).
M.DIRECTION_FIELDS = {
  templates = "{ h = header template, c = source template } under templates/",
}

--- Fields a direction may add: `parts`, the fragments under templates/ that
-- its templates render (sdpa's backward pass, rendered into the forward's files).
M.OPTIONAL_DIRECTION_FIELDS = {
  parts = "the fragments under templates/ its templates render",
}

local by_name = {}
for _, n in ipairs(M.names) do by_name[n] = require("families." .. n) end

--- The family table of a kind, or nil.
function M.get(kind) return by_name[kind] end

--- The family of a config (raw or normalized; no kind: the default), or nil
-- for an unknown kind.
function M.of(cfg) return by_name[cfg.kind == nil and M.DEFAULT or cfg.kind] end

--- The schema module of a kind.
function M.schema(kind) return require(by_name[kind].schema) end

--- The planner module of a kind.
function M.planner(kind) return require(by_name[kind].planner) end

--- A direction of a kind's family ("forward"), or nil when it has none.
function M.direction(kind, name) return by_name[kind].directions[name] end

return M
