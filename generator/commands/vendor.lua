--- attngen vendor CONFIG... -o DIR [--set key=value]...
--
-- Writes a folder that a C/C++ project copies as is: the kernels of the
-- configs (<name>.c/.h), the runtime they compile against
-- (runtime/attn_runtime.{h,c} and attn_cpu_profiles.h, verbatim), an
-- umbrella header attngen.h
-- with the API documentation, build snippets (CMakeLists.txt, attngen.mk),
-- a README.md and example.c.  The non-kernel files come from
-- templates/vendor/*.tmpl ("@" starts a Lua line, @{expr} is a value, so
-- that Makefile $(...) and CMake ${...} pass through).
--
-- The folder is built next to DIR and renamed into place.  DIR may be
-- missing, empty, or an earlier output of this command: the marker file
-- .attngen-vendor lists the files the command wrote, and only those are
-- replaced or removed; anything else in DIR is kept.  A DIR that holds
-- files but no marker is refused, as is a file of the user's that has the
-- name of one the command would write.
local lfs = require("lfs")
local path = require("pl.path")
local template = require("pl.template")
local families = require("families")
local kernel_files = require("kernel_files")
local presets = require("presets")
local util = require("util")
local version = require("version")

local M = {}

M.MARKER = ".attngen-vendor"

-- the runtime files the generated code compiles against, copied verbatim
M.RUNTIME_FILES = { "attn_runtime.h", "attn_runtime.c", "attn_cpu_profiles.h" }

-- config names whose files or header guard would clash with the folder's
-- own files (compared in lower case: the folder may land on a file system
-- that ignores case)
local RESERVED = {
  attngen = "attngen.h is the umbrella header",
  attn_runtime = "attn_runtime.c/.h are the runtime",
  attn_cpu_profiles = "attn_cpu_profiles.h is the runtime's table of CPU profiles",
  runtime = "its header guard ATTN_RUNTIME_H is attn_runtime.h's",
  example = "example.c is the example program",
  attn_vendored = "attn_vendored.c is the folder's table of kernels and their lookup",
}

function M.add_to_parser(parser)
  local c = parser:command("vendor",
    "Write a self-contained folder for a C/C++ project: kernels, runtime, attngen.h, build snippets.")
  c:argument("config", "Config file or preset name."):args("+")
  c:option("-o --output", "The folder to write (created; or an earlier 'attngen vendor' output)."):count(1)
  c:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
  c:flag("-q --quiet", "Print nothing on success.")
end

--- The command that reproduces the folder.  Its -o says '<this folder>'
-- instead of the path given, so the text does not depend on where the
-- folder is.
function M.command(displays, sets)
  local parts = { "attngen vendor" }
  for _, d in ipairs(displays) do parts[#parts + 1] = util.shell_quote(d) end
  for _, s in ipairs(sets or {}) do parts[#parts + 1] = "--set " .. util.shell_quote(s) end
  parts[#parts + 1] = "-o '<this folder>'"
  return table.concat(parts, " ")
end

---------------------------------------------------------------------------
-- what the folder holds

--- The ISA variants of a plan by architecture:
-- "avx512, avx2 (x86-64); neon (AArch64); scalar (any CPU)"
local function isa_list(plan)
  local arches, by_arch = {}, {}
  for _, v in ipairs(plan.variants) do
    local guard = v.isa.arch_guard
    local arch = not guard and "any CPU" or guard:find("__x86_64__", 1, true) and "x86-64"
      or guard:find("__aarch64__", 1, true) and "AArch64" or guard
    if not by_arch[arch] then
      by_arch[arch] = {}
      arches[#arches + 1] = arch
    end
    table.insert(by_arch[arch], v.isa.name)
  end
  local isas = {}
  for i, arch in ipairs(arches) do isas[i] = ("%s (%s)"):format(table.concat(by_arch[arch], ", "), arch) end
  return table.concat(isas, "; ")
end

--- What a kernel computes and what a call must pass, for the docs: its
-- family's description (the family table's vendor.describe), the names of
-- the kernel and its files, and its ISAs.
local function describe(plan)
  local d = families.get(plan.family).vendor.describe(plan)
  d.name, d.entry, d.kernel = plan.name, plan.entry, plan.kernel
  d.header, d.source = plan.name .. ".h", plan.name .. ".c"
  d.isas = isa_list(plan)
  return d
end

--- The external symbols of a kernel's object file (naming.lua's names).
local function symbols(plan)
  local s = { plan.entry, plan.kernel }
  for _, v in ipairs(plan.variants) do s[#s + 1] = v.fn end
  return s
end

local compiled = {}

local function render(name, env)
  local ct = compiled[name]
  if not ct then
    local file = util.root .. "/templates/vendor/" .. name
    local src, err = util.read_file(file)
    if not src then error(("cannot read template %s: %s"):format(file, tostring(err)), 0) end
    local cerr
    ct, cerr = template.compile(src, { escape = "@", inline_escape = "@", inline_brackets = "{}",
      chunk_name = "templates/vendor/" .. name })
    if not ct then error(("templates/vendor/%s: %s"):format(name, tostring(cerr)), 0) end
    compiled[name] = ct
  end
  local out, rerr = ct:render(env)
  if not out then error(("templates/vendor/%s: %s"):format(name, tostring(rerr)), 0) end
  return out
end

--- Every quoted #include of the C files must be one of the folder's files:
-- the folder is self-contained (a failure is a bug in a template).
local function check_includes(files)
  local have = {}
  for _, f in ipairs(files) do have[f.name] = true end
  for _, f in ipairs(files) do
    if f.name:match("%.[ch]$") then
      for inc in ("\n" .. f.text):gmatch("\n%s*#%s*include%s*\"([^\"]+)\"") do
        if not have[inc] then
          error(("vendor: %s includes \"%s\", which the folder does not hold"):format(f.name, inc), 0)
        end
      end
    end
  end
end

--- Loads and renders the configs' kernels.  Returns the kernels (as
-- describe returns them), their files { name, text } and the configs'
-- display names, or nil, err.
local function kernel_outputs(configs, sets)
  local kernels, out, displays, loaded = {}, {}, {}, {}
  local by_name, by_symbol = {}, {}
  for _, arg in ipairs(configs) do
    local cfg, display = presets.load(arg, sets)
    if not cfg then return nil, display end
    local key = cfg.name:lower()
    if by_name[key] then
      return nil, ("%s: config name '%s' is used twice (also by %s); each config needs its own name%s")
        :format(arg, cfg.name, by_name[key].arg,
          by_name[key].name ~= cfg.name and " (names that differ only in case clash in file names)" or "")
    end
    if RESERVED[key] then
      return nil, ("%s: a vendored config cannot be named '%s': %s; choose another name (--set name=...)")
        :format(arg, cfg.name, RESERVED[key])
    end
    by_name[key] = { arg = arg, name = cfg.name }
    displays[#displays + 1] = display
    loaded[#loaded + 1] = { arg = arg, cfg = cfg }
  end
  -- the kernels' banners name the command that wrote the folder, as its README does
  local command = M.command(displays, sets)
  for _, l in ipairs(loaded) do
    local arg = l.arg
    local files, plan = kernel_files.render(l.cfg, nil, sets, command)
    if not files then return nil, plan end
    for _, sym in ipairs(symbols(plan)) do
      if by_symbol[sym] then
        return nil, ("%s: the kernel's symbol %s is also one of %s's; rename one config")
          :format(arg, sym, by_symbol[sym])
      end
      by_symbol[sym] = arg
    end
    for _, f in ipairs(files) do out[#out + 1] = f end
    kernels[#kernels + 1] = describe(plan)
  end
  return kernels, out, displays
end

--- The folder's files with what each is, for its README.
local function listing(kernels)
  local list = {}
  for _, k in ipairs(kernels) do
    list[#list + 1] = { name = k.header, what = "declares `" .. k.entry .. "` and `" .. k.kernel .. "`" }
    list[#list + 1] = { name = k.source,
      what = "the kernel `" .. k.name .. "`: every ISA variant and the dispatch" }
  end
  local rest = {
    { "attn_runtime.h", "the runtime: `attn_args`, `attn_status`, `attn_spec`/`attn_kernel`, CPU queries, "
      .. "allocation hooks" },
    { "attn_runtime.c", "the runtime: argument checks, CPU detection, dispatch, allocation" },
    { "attn_cpu_profiles.h", "the runtime's table of CPU profiles (what it chooses for each CPU), included by "
      .. "attn_runtime.c" },
    { "attngen.h", "the one header to include: the runtime and every kernel, with the API documentation" },
    { "attn_vendored.c", "`attn_vendored_find`: the kernel for a model's head counts, head dims and K/V type, "
      .. "looked up at run time" },
    { "CMakeLists.txt", "the static library `attngen` for CMake (`add_subdirectory`)" },
    { "attngen.mk", "the same for a Makefile (`include`)" },
    { "example.c", "a program that calls `" .. kernels[1].entry .. "` and prints a checksum" },
    { "README.md", "this file" },
    { M.MARKER, "the list of files `attngen vendor` wrote (and replaces when run again)" },
  }
  for _, r in ipairs(rest) do list[#list + 1] = { name = r[1], what = r[2] } end
  return list
end

-- text broken at spaces into lines of at most `width` characters (counting
-- `prefix`, which starts every line after the first)
local function wrap(text, prefix, width)
  local lines, line = {}, nil
  for word in text:gmatch("%S+") do
    if line and #prefix + #line + 1 + #word > width then
      lines[#lines + 1] = line
      line = word
    else
      line = line and (line .. " " .. word) or word
    end
  end
  lines[#lines + 1] = line or ""
  return table.concat(lines, "\n" .. prefix)
end

local function join(list, prefix, sep)
  local t = {}
  for i, s in ipairs(list) do t[i] = prefix .. s end
  return table.concat(t, sep)
end

--- The values the templates of templates/vendor/ see.
local function template_env(kernels, displays, sets)
  local sources, headers, objects, names = { "attn_runtime.c", "attn_vendored.c" },
    { "attn_runtime.h", "attn_cpu_profiles.h", "attngen.h" }, {}, {}
  local any_classic, any_args = false, false -- kernels called with attn_classic_args, with attn_args
  for _, k in ipairs(kernels) do
    if k.classic then any_classic = true else any_args = true end
    sources[#sources + 1] = k.source
    headers[#headers + 1] = k.header
    objects[#objects + 1] = " " .. k.name .. ".o"
    names[#names + 1] = k.name
  end
  local command = M.command(displays, sets)
  return {
    ipairs = ipairs,
    version = version.string,
    command = command,
    -- the opening comment of the build files (CMakeLists.txt, attngen.mk),
    -- after their first "# "
    hash_banner = table.concat({
      "attngen kernels: " .. table.concat(names, ", "),
      "#",
      "# Written by attngen " .. version.string .. " with",
      "#   " .. command,
      "# Do not edit: run that command again to change the kernels.",
    }, "\n"),
    command_args = M.command(displays, sets):gsub("^attngen vendor ", ""),
    kernels = kernels,
    k = kernels[1],
    any_classic = any_classic,
    any_args = any_args,
    names = table.concat(names, ", "),
    sources = sources,
    headers = headers,
    objects = table.concat(objects),
    files = listing(kernels),
    wrap = wrap,
    join = join,
  }
end

--- Loads and renders everything; returns the list of files { name, text }
-- (marker last), or nil, err.
function M.files(configs, sets)
  local kernels, out, displays = kernel_outputs(configs, sets)
  if not kernels then return nil, out end

  local runtime_dir = util.root .. "/runtime/"
  for _, name in ipairs(M.RUNTIME_FILES) do
    local text, err = util.read_file(runtime_dir .. name)
    if not text then return nil, ("%s%s: cannot read: %s"):format(runtime_dir, name, tostring(err)) end
    out[#out + 1] = { name = name, text = text }
  end

  local env = template_env(kernels, displays, sets)
  for _, name in ipairs({ "attngen.h", "attn_vendored.c", "CMakeLists.txt", "attngen.mk", "example.c", "README.md" }) do
    out[#out + 1] = { name = name, text = render(name .. ".tmpl", env) }
  end
  check_includes(out)

  local marker = {
    "# Written by attngen " .. version.string .. " with",
    "#   " .. env.command,
    "# The files below are the ones it wrote. Running it again into this folder",
    "# replaces or removes them, and only them.",
  }
  for _, f in ipairs(out) do marker[#marker + 1] = f.name end
  out[#out + 1] = { name = M.MARKER, text = table.concat(marker, "\n") .. "\n" }
  return out
end

---------------------------------------------------------------------------
-- the folder

--- The entries of a folder (no . and ..), sorted.
local function entries(d)
  local t = {}
  for e in lfs.dir(d) do
    if e ~= "." and e ~= ".." then t[#t + 1] = e end
  end
  table.sort(t)
  return t
end

--- The file names a marker lists, or nil, err.
local function read_marker(file)
  local text, err = util.read_file(file)
  if not text then return nil, ("%s: cannot read: %s"):format(file, tostring(err)) end
  local names, n = {}, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line ~= "" and not line:match("^#") then
      if not line:match("^[%w_][%w_.%-]*$") or line == M.MARKER then
        return nil, ("%s:%d: '%s' is not a file name 'attngen vendor' writes; the folder is not its output")
          :format(file, n, line)
      end
      names[#names + 1] = line
    end
  end
  return names
end

--- Removes the files this command wrote into folder d, then d if that
-- left it empty (an entry of the user's that could not move back stays).
local function remove_written(d, files)
  for _, f in ipairs(files) do os.remove(d .. "/" .. f.name) end
  lfs.rmdir(d)
end

--- What DIR is: { kind = "missing" | "empty" | "previous", owned = {...},
-- kept = {...} } or nil, err.  `owned` are the files the last run wrote,
-- `kept` everything else (the user's).
local function inspect(out, shown, new_names)
  local attr = lfs.symlinkattributes(out)
  if not attr then return { kind = "missing", owned = {}, kept = {} } end
  if attr.mode == "link" then
    return nil, ("%s: is a symbolic link; give the folder it points to"):format(shown)
  end
  if attr.mode ~= "directory" then
    return nil, ("%s: exists and is not a folder; nothing was written"):format(shown)
  end
  local cwd = lfs.currentdir() or ""
  if cwd == out or cwd:sub(1, #out + 1) == out .. "/" or out == "/" then
    return nil, ("%s: is the current folder or contains it; run from outside it (e.g. its parent)")
      :format(shown)
  end
  local list = entries(out)
  if #list == 0 then return { kind = "empty", owned = {}, kept = {} } end
  local marker = out .. "/" .. M.MARKER
  local mattr = lfs.symlinkattributes(marker)
  if not mattr or mattr.mode ~= "file" then
    return nil, ("%s: exists, is not empty and has no %s (it is not an 'attngen vendor' output); "
      .. "nothing was written: choose an empty or new folder"):format(shown, M.MARKER)
  end
  local listed, err = read_marker(marker)
  if not listed then return nil, err end
  local is_listed, owned, kept, new = {}, {}, {}, {}
  for _, n in ipairs(listed) do is_listed[n] = true end
  for _, n in ipairs(new_names) do new[n] = true end
  for _, e in ipairs(list) do
    if e ~= M.MARKER then
      local a = lfs.symlinkattributes(out .. "/" .. e)
      if is_listed[e] and a and a.mode == "file" then
        owned[#owned + 1] = e
      elseif new[e] then
        return nil, ("%s/%s: exists and was not written by 'attngen vendor'; nothing was written: "
          .. "move it away first"):format(shown, e)
      else
        kept[#kept + 1] = e
      end
    end
  end
  return { kind = "previous", owned = owned, kept = kept }
end

--- Whether the folder already holds exactly these files.
local function unchanged(out, state, files)
  if state.kind ~= "previous" or #state.owned + 1 ~= #files then return false end
  local owned = {}
  for _, n in ipairs(state.owned) do owned[n] = true end
  owned[M.MARKER] = true
  for _, f in ipairs(files) do
    if not owned[f.name] or util.read_file(out .. "/" .. f.name) ~= f.text then return false end
  end
  return true
end

--- Writes the files into a new folder next to DIR; returns its path or nil, err.
local function write_tmp(parent, base, files)
  local tmp = ("%s/.%s.tmp.%s"):format(parent, base, util.unique_suffix())
  local ok, err = lfs.mkdir(tmp)
  if not ok then return nil, ("%s: cannot create: %s"):format(tmp, tostring(err)) end
  for _, f in ipairs(files) do
    local fh, oerr = io.open(tmp .. "/" .. f.name, "wb")
    local wok, werr, cok, cerr
    if fh then
      wok, werr = fh:write(f.text)
      cok, cerr = fh:close()
    end
    if not fh or not wok or not cok then
      remove_written(tmp, files)
      return nil, ("%s/%s: cannot write: %s"):format(tmp, f.name, tostring(oerr or werr or cerr))
    end
  end
  return tmp
end

--- Moves names from folder a to folder b; on a failure moves back what it
-- moved and returns nil, err.
local function move_all(names, a, b)
  for i, n in ipairs(names) do
    local ok, err = os.rename(a .. "/" .. n, b .. "/" .. n)
    if not ok then
      for j = i - 1, 1, -1 do os.rename(b .. "/" .. names[j], a .. "/" .. names[j]) end
      return nil, err
    end
  end
  return true
end

--- Puts the finished folder tmp in place of out; returns true or nil, err.
-- The user's entries (state.kept) move into the new folder; the old files
-- go with the old folder, which is then removed.
local function place(tmp, out, state, parent, base)
  if state.kind ~= "previous" then
    -- rename() replaces an empty folder, and fails if one with files appeared meanwhile
    local ok, err = os.rename(tmp, out)
    if not ok then return nil, err end
    return true
  end
  local ok, err = move_all(state.kept, out, tmp)
  if not ok then return nil, err end
  local old = ("%s/.%s.old.%s"):format(parent, base, util.unique_suffix())
  ok, err = os.rename(out, old)
  if not ok then
    move_all(state.kept, tmp, out)
    return nil, err
  end
  ok, err = os.rename(tmp, out)
  if not ok then
    os.rename(old, out)
    move_all(state.kept, tmp, out)
    return nil, err
  end
  for _, n in ipairs(state.owned) do os.remove(old .. "/" .. n) end
  os.remove(old .. "/" .. M.MARKER)
  if not lfs.rmdir(old) then
    io.stderr:write(("attngen: note: %s was left behind (it is not empty)\n"):format(old))
  end
  return true
end

function M.run(args)
  local files, err = M.files(args.config, args.set)
  if not files then return nil, err end

  local shown = args.output
  local trimmed = shown:gsub("/+$", "")
  if trimmed == "" then trimmed = "/" end
  local out = path.normpath(path.abspath(trimmed))
  local parent, base = path.dirname(out), path.basename(out)
  if base == "" or base == "." or base == ".." then
    return nil, ("%s: not a folder name this command can write"):format(shown)
  end

  local new_names = {}
  for i, f in ipairs(files) do new_names[i] = f.name end
  local state, serr = inspect(out, shown, new_names)
  if not state then return nil, serr end
  if unchanged(out, state, files) then
    if not args.quiet then print("unchanged " .. shown) end
    return 0
  end

  local ok, merr = util.makepath(parent)
  if not ok then return nil, merr end
  local tmp, terr = write_tmp(parent, base, files)
  if not tmp then return nil, terr end
  local placed, perr = place(tmp, out, state, parent, base)
  if not placed then
    remove_written(tmp, files)
    return nil, ("%s: cannot put the new folder in place: %s; nothing was changed"):format(shown, tostring(perr))
  end

  if not args.quiet then
    local sep = shown:sub(-1) == "/" and "" or "/"
    local now = {}
    for _, f in ipairs(files) do
      now[f.name] = true
      print("wrote " .. shown .. sep .. f.name)
    end
    for _, n in ipairs(state.owned) do
      if not now[n] then print("removed " .. shown .. sep .. n) end
    end
    for _, n in ipairs(state.kept) do print("kept " .. shown .. sep .. n) end
  end
  return 0
end

return M
