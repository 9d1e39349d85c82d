--- attngen import-hf config.json [-o FILE_OR_DIR] [--name NAME] [--isa LIST]:
-- attngen configs from a Hugging Face config.json (mapping in generator/import/).
local path = require("pl.path")
local config = require("config")
local importer = require("import.hf")
local isa_registry = require("isa")
local json = require("import.json")
local planner = require("planner")
local util = require("util")

local M = {}

local KNOWN_ISAS = table.concat(isa_registry.order, ", ")

function M.add_to_parser(parser)
  local c = parser:command("import-hf", "Write attngen configs from a Hugging Face config.json.")
    :epilog("A model whose layers differ (sliding-window or chunked and full attention, as Gemma-2 and Llama 4) "
      .. "gives two configs, <name>_local and <name>_global; Whisper gives <name>_encoder, <name>_decoder and "
      .. "<name>_cross.")
  c:argument("config_json", "The model's config.json."):argname("config.json")
  c:option("-o --output", "Output folder (created as needed), or a .lua file when the model gives one config "
    .. "(default: the current folder).")
  c:option("--name", "Config name (a C identifier; default: from the file name, or its folder's name "
    .. "when the file is config.json).")
  c:option("--isa", ("ISA variants to emit, comma-separated (%s; default: all); "):format(KNOWN_ISAS)
    .. "repeatable."):count("*")
  c:option("--dtype", "Storage type of the tensors: auto (the model's torch_dtype), f32, bf16 or f16 "
    .. "(default: f32, no dtype line).")
  c:flag("--common-keys", "Read only the common keys (heads, head dims, windows, scale, softcap) where the "
    .. "config.json has keys that change attention in a way import-hf does not read (kv_lora_rank outside "
    .. "DeepSeek and Kimi K2, no_rope_layers, attn_temperature_tuning, a rope_scaling type it cannot express); "
    .. "the written file names the keys left out.")
  c:flag("--force", "Replace existing files whose content differs.")
  c:flag("-q --quiet", "Print nothing on success.")
end

--- The default base name: --name, the output file's name, the JSON file's
-- name, or its folder's name when it is "config.json".
local function base_name(args, out_file)
  if args.name then return args.name end
  if out_file then
    local n = importer.identifier(path.basename(out_file):gsub("%.lua$", ""))
    if n then return n end
  end
  local stem = path.basename(args.config_json):gsub("%.[jJ][sS][oO][nN]$", "")
  if stem:lower() == "config" then
    stem = path.basename(path.dirname(path.abspath(args.config_json)))
  end
  return importer.identifier(stem) or "model"
end

local function isa_list(args)
  if #args.isa == 0 then return nil end
  local list = {}
  for _, item in ipairs(args.isa) do
    for n in item:gmatch("[^,%s]+") do list[#list + 1] = n end
  end
  if #list == 0 then return nil, "--isa: give one or more of " .. KNOWN_ISAS end
  return list
end

--- The command line shown in a config's header (without -o and --force:
-- the text does not depend on where it is written).
local function command_line(args)
  local parts = { "attngen import-hf", util.shell_quote(args.config_json) }
  if args.name then parts[#parts + 1] = "--name " .. util.shell_quote(args.name) end
  for _, i in ipairs(args.isa) do parts[#parts + 1] = "--isa " .. util.shell_quote(i) end
  if args.dtype then parts[#parts + 1] = "--dtype " .. util.shell_quote(args.dtype) end
  if args.common_keys then parts[#parts + 1] = "--common-keys" end
  return table.concat(parts, " ")
end

--- Loads a config's text through the sandboxed loader and plans it: the
-- written text is exactly what attngen will read.
local function self_check(c)
  local tmp = os.tmpname()
  local ok, err = util.write_atomic(tmp, c.text)
  if ok == nil then
    os.remove(tmp)
    return nil, ("cannot write a temporary file: %s"):format(tostring(err))
  end
  local cfg, lerr = config.load(tmp)
  os.remove(tmp)
  if not cfg then error(("import-hf rendered a config that does not load: %s"):format(lerr)) end
  if util.serialize(cfg) ~= util.serialize(c.cfg) then
    error(("import-hf rendered config '%s' reads back as %s, expected %s"):format(c.name,
      util.serialize(cfg), util.serialize(c.cfg)))
  end
  planner.plan(cfg)
  return true
end

function M.run(args)
  local file = args.config_json
  if path.isdir(file) then return nil, ("%s: is a folder; give the path of a config.json"):format(file) end
  local text, rerr = util.read_file(file)
  if not text then
    local why = tostring(rerr)
    if why:sub(1, #file + 2) == file .. ": " then why = why:sub(#file + 3) end
    return nil, ("%s: cannot read: %s"):format(file, why)
  end

  -- where to write: a folder, or one .lua file
  local out = args.output or "."
  local out_file
  if path.isfile(out) or (not path.isdir(out) and out:match("%.lua$")) then out_file = out end

  local isa, ierr = isa_list(args)
  if ierr then return nil, ierr end
  local name = base_name(args, out_file)
  if not name:match("^[%a_][%w_]*$") then
    return nil, ("--name %s: must be a C identifier (letters, digits, _; not starting with a digit)")
      :format(util.shell_quote(json.plain(name)))
  end

  local j, derr = json.decode(text, file)
  if not j then return nil, derr end
  local dtype, dtype_note
  if args.dtype then
    dtype, dtype_note = importer.dtype_of(j, args.dtype, file)
    if not dtype then return nil, dtype_note end
  end
  local result, err = importer.import(j, {
    file = file, text = text, name = name, isa = isa, command = command_line(args),
    dtype = dtype, dtype_note = dtype_note, common_keys = args.common_keys,
  })
  if not result then return nil, err end
  for _, c in ipairs(result.configs) do
    local ok, cerr = self_check(c)
    if not ok then return nil, cerr end
  end

  -- destinations, checked before anything is written
  local dests = {}
  if out_file then
    if #result.configs > 1 then
      local names = {}
      for i, c in ipairs(result.configs) do names[i] = c.name end
      return nil, ("-o %s names one file, but %s gives %d configs (%s); give -o a folder")
        :format(out_file, file, #result.configs, table.concat(names, ", "))
    end
    dests[1] = out_file
  else
    for i, c in ipairs(result.configs) do dests[i] = out .. "/" .. c.name .. ".lua" end
  end
  for i, dest in ipairs(dests) do
    if path.isdir(dest) then return nil, ("%s: is a folder"):format(dest) end
    local old = util.read_file(dest)
    if old and old ~= result.configs[i].text and not args.force then
      return nil, ("%s: exists with other content; use --force to replace it"):format(dest)
    end
  end

  local folder = out_file and path.dirname(out_file) or out
  if folder ~= "" then
    local ok, merr = util.makepath(folder)
    if not ok then return nil, merr end
  end
  local files = {}
  for i, dest in ipairs(dests) do files[#files + 1] = { path = dest, text = result.configs[i].text } end
  local wrote, werr = util.write_all(files, args.quiet)
  if not wrote then return nil, werr end
  return 0
end

return M
