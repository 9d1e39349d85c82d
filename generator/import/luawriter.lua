--- Writes an imported config as a Lua file in the style of configs/*.lua:
-- a header of comments naming the source and the values used, then
-- `return { ... }` with one commented line per key.  Every string that
-- comes from the JSON is quoted or escaped (import.json), so it can neither
-- break a line nor end a comment.
local json = require("import.json")

local M = {}

--- The header: what the config is, where it came from, the notes and the
-- source values used.
local function header(result, c, opts, add)
  add(("-- %s: %s %s: %s."):format(c.name, result.label, c.what, c.description))
  local arch = ""
  if type(result.used) == "table" then
    for _, u in ipairs(result.used) do
      if u.key == "architectures" then arch = ", architectures " .. u.shown end
    end
  end
  add(("-- Imported from %s (model_type %s%s) by"):format(json.quote(opts.file), json.show(result.model_type), arch))
  add("--   " .. json.plain(opts.command))
  if c.layers_note then add("-- " .. c.layers_note .. ".") end
  if c.siblings then add("-- The model's other attention: " .. table.concat(c.siblings, ", ") .. ".") end
  for _, n in ipairs(result.notes) do add("-- " .. n) end
  add("-- Source values used:")
  for _, u in ipairs(result.used) do
    if u.key ~= "model_type" and u.key ~= "architectures" then
      local s = "--   " .. u.key
      if u.shown ~= "" then s = s .. " = " .. u.shown end
      if u.note then s = s .. (u.shown ~= "" and " (" .. u.note .. ")" or ": " .. u.note) end
      add(s)
    end
  end
end

--- The config table: name, then each line { key, value (Lua text), note,
-- pre (comment lines above it) }.
local function body(c, add)
  add("return {")
  add(("  name = %s,"):format(json.quote(c.name)))
  for _, l in ipairs(c.lines) do
    for _, p in ipairs(l.pre or {}) do add("  -- " .. p) end
    add(("  %s = %s,%s"):format(l.key, l.value, l.note and (" -- " .. l.note) or ""))
  end
  add("}")
end

--- The Lua value of an isa list: { "avx2", "scalar" }.
function M.string_list(list)
  local q = {}
  for i, n in ipairs(list) do q[i] = json.quote(n) end
  return "{ " .. table.concat(q, ", ") .. " }"
end

--- The text of one config file.  result: the import's result (label,
-- model_type, used, notes); c: one of its configs (name, what,
-- description, lines, layers_note, siblings); opts: file, command.
function M.render(result, c, opts)
  local out = {}
  local function add(s) out[#out + 1] = s end
  header(result, c, opts, add)
  body(c, add)
  return table.concat(out, "\n") .. "\n"
end

return M
