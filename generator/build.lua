--- Compiling a config's kernel with the runtime and the tools (run, check,
-- bench) into the cache, keyed by a hash of the generated source, the
-- generator version and the compiler.
--
-- Concurrency: an entry is built in a private temporary folder and renamed
-- into place; a rename that loses the race finds the winner's folder and
-- uses it.  A folder in the cache is therefore always complete.
local path = require("pl.path")
local dir = require("pl.dir")
local kernel_files = require("kernel_files")
local util = require("util")
local version = require("version")

local M = {}

M.TOOLS = { "run", "check", "bench" }

local RUNTIME_SOURCES = { "attn_runtime.c", "attn_reference.c", "attn_npy.c", "attn_verify.c" }

--- The build cache (util.cache_dir, which the tuning file also lives in).
M.cache_dir = util.cache_dir

function M.compiler() return os.getenv("CC") or "cc" end

--- Two independent 32-bit polynomial hashes of a string, as 16 hex digits.
-- Integer arithmetic that stays exact in doubles, so every Lua agrees.
function M.hash(s)
  local h1, h2 = 5381, 52711
  for i = 1, #s do
    local b = s:byte(i)
    h1 = (h1 * 131 + b) % 4294967291
    h2 = (h2 * 65599 + b) % 4294967279
  end
  return ("%08x%08x"):format(h1, h2)
end

local compiler_id_cache
local function compiler_id()
  if not compiler_id_cache then
    local ok, out = util.run_capture(util.shell_quote(M.compiler()) .. " --version")
    if not ok then
      return nil, ("C compiler '%s' not found or not working (set CC, or run 'make bootstrap')"):format(M.compiler())
    end
    compiler_id_cache = out:match("[^\n]*")
  end
  return compiler_id_cache
end

--- The line of a compiler's output that says what went wrong (the first
-- one mentioning an error, else the first), for a one-line message.
function M.first_error(out)
  local first
  for line in (tostring(out or "") .. "\n"):gmatch("([^\n]*)\n") do
    line = line:gsub("^%s+", ""):gsub("%s+$", "")
    if line ~= "" then
      first = first or line
      if line:lower():find("error", 1, true) then return line end
    end
  end
  return first or "no output"
end

local function read_all(files)
  local parts = {}
  for _, f in ipairs(files) do parts[#parts + 1] = util.read_file(f) or "" end
  return table.concat(parts)
end

--- Publishes a complete build folder tmp as entry (marker: a file every
-- complete entry holds).  The rename is atomic; if another process won the
-- race, its entry is used.  Returns entry or nil, err.
local function publish(tmp, entry, marker)
  local renamed = os.rename(tmp, entry)
  if not renamed and path.isdir(entry) and not path.isfile(entry .. "/" .. marker) then
    dir.rmtree(entry) -- an incomplete entry (left by a killed build of an older attngen): replace it
    renamed = os.rename(tmp, entry)
  end
  if not renamed then
    dir.rmtree(tmp)
    if not path.isfile(entry .. "/" .. marker) then
      return nil, ("cannot publish the build into %s"):format(entry)
    end
  end
  return entry
end

--- Where an OpenBLAS library is found in the usual places: part of the
-- cache key, so that installing or removing it rebuilds the bench (which
-- links it when it can) instead of keeping a build without, or with, it.
local BLAS_PATHS = {
  "/usr/lib/x86_64-linux-gnu/libopenblas.so", "/usr/lib/aarch64-linux-gnu/libopenblas.so",
  "/usr/lib64/libopenblas.so", "/usr/lib/libopenblas.so", "/usr/local/lib/libopenblas.so",
  "/opt/homebrew/opt/openblas/lib/libopenblas.dylib", "/usr/local/opt/openblas/lib/libopenblas.dylib",
}
local function blas_probe()
  local found = {}
  for _, p in ipairs(BLAS_PATHS) do
    if path.exists(p) then found[#found + 1] = p end
  end
  return table.concat(found, ";")
end

--- Builds (or finds) the tools for a config.  Returns the entry folder,
-- holding the executables attn_run, attn_check, attn_bench; or nil, err.
-- The kernel is rendered as `generate` writes it (tile = "auto": the tuning
-- file's tiles).
function M.ensure(cfg, display, sets)
  local files, plan = kernel_files.render(cfg, display, sets)
  if not files then return nil, plan end
  local cid, cerr = compiler_id()
  if not cid then return nil, cerr end

  local rt = util.root .. "/runtime"
  local inputs = {}
  for _, f in ipairs(RUNTIME_SOURCES) do
    inputs[#inputs + 1] = rt .. "/" .. f
    inputs[#inputs + 1] = rt .. "/" .. f:gsub("%.c$", ".h") -- a header change rebuilds too
  end
  for _, t in ipairs(M.TOOLS) do inputs[#inputs + 1] = rt .. "/tools/attn_" .. t .. "_main.c" end
  inputs[#inputs + 1] = rt .. "/tools/attn_tool_inputs.h"
  inputs[#inputs + 1] = rt .. "/tools/attn_entry.c"
  local key = M.hash(files[1].text .. files[2].text .. read_all(inputs) .. version.string .. cid
    .. (os.getenv("CFLAGS") or "") .. blas_probe())
  local cache = M.cache_dir()
  local entry = ("%s/%s-%s"):format(cache, cfg.name, key)
  if path.isfile(entry .. "/attn_" .. M.TOOLS[#M.TOOLS]) then return entry end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  local tmp = ("%s/.build-%s-%s"):format(cache, cfg.name, util.unique_suffix())
  ok, err = util.makepath(tmp)
  if not ok then return nil, err end
  local function fail(msg)
    dir.rmtree(tmp)
    return nil, msg
  end
  for _, f in ipairs(files) do
    local w, werr = util.write_atomic(tmp .. "/" .. f.name, f.text)
    if w == nil then return fail(werr) end
  end
  -- the tools reach the kernel through attn_entry_kernel, which
  -- runtime/tools/attn_entry.c defines from -DATTN_ENTRY_KERNEL
  local entry_unit = ("%s -DATTN_ENTRY_KERNEL=%s"):format(util.shell_quote(rt .. "/tools/attn_entry.c"),
    util.shell_quote(plan.kernel))

  local cc = util.shell_quote(M.compiler())
  local q = util.shell_quote
  local cflags = "-std=c99 -O2 -D_POSIX_C_SOURCE=200809L " .. (os.getenv("CFLAGS") or "")
  local common = ("%s %s -I%s -I%s"):format(cc, cflags, q(tmp), q(rt))
  local srcs = {}
  for _, f in ipairs(RUNTIME_SOURCES) do srcs[#srcs + 1] = q(rt .. "/" .. f) end
  -- one object for the kernel and the runtime, then a link per tool
  local function build(openmp)
    local omp = openmp and " -fopenmp" or ""
    local objs = {}
    local units = { q(tmp .. "/" .. cfg.name .. ".c"), entry_unit }
    for _, src in ipairs(srcs) do units[#units + 1] = src end
    for i, src in ipairs(units) do
      local obj = q(("%s/o%d.o"):format(tmp, i))
      local okc, out = util.run_capture(("%s%s -c %s -o %s"):format(common, omp, src, obj))
      if not okc then return nil, out end
      objs[#objs + 1] = obj
    end
    for _, t in ipairs(M.TOOLS) do
      local function link(defines, libs)
        return util.run_capture(("%s%s%s %s %s -o %s%s -lm"):format(common, omp, defines,
          q(rt .. "/tools/attn_" .. t .. "_main.c"), table.concat(objs, " "), q(tmp .. "/attn_" .. t), libs))
      end
      -- the bench adds an unfused OpenBLAS baseline when OpenBLAS is installed
      local okl, out = false, nil
      -- (-ldl: its look-up of cblas_sbgemm; part of libc from glibc 2.34 on)
      if t == "bench" then okl = link(" -DATTN_HAVE_OPENBLAS", " -lopenblas -ldl") end
      if not okl then okl, out = link("", "") end
      if not okl then return nil, out end
    end
    return true
  end
  if not build(true) then
    local built, out = build(false) -- a compiler without OpenMP still builds a single-threaded kernel
    if not built then
      return fail(("compiling %s with '%s' failed: %s"):format(cfg.name, M.compiler(), M.first_error(out)))
    end
  end
  -- a "compiler" that exits 0 without writing the programs must not leave
  -- an entry that looks complete
  for _, t in ipairs(M.TOOLS) do
    if not path.isfile(tmp .. "/attn_" .. t) then
      return fail(("compiling %s with '%s' produced no attn_%s (is CC a C compiler?)")
        :format(cfg.name, M.compiler(), t))
    end
  end
  return publish(tmp, entry, "attn_" .. M.TOOLS[#M.TOOLS])
end

--- Builds (or finds) the timing program of `attngen tune`: the generated
-- files of every candidate and their table (files: {name, text} as
-- tune.sources returns them) with the runtime and
-- runtime/tools/attn_tune_main.c, compiled in one compiler invocation into
-- one executable.  Cached like the tools, keyed by every input.  Returns the
-- executable's path, whether it was built now, or nil, err.
function M.ensure_tuner(name, files)
  local cid, cerr = compiler_id()
  if not cid then return nil, cerr end
  local rt = util.root .. "/runtime"
  local runtime = { rt .. "/attn_runtime.c", rt .. "/attn_reference.c" }
  local driver = rt .. "/tools/attn_tune_main.c"
  local headers = { rt .. "/attn_runtime.h", rt .. "/attn_reference.h", rt .. "/tools/attn_tool_inputs.h" }
  local texts = {}
  for _, f in ipairs(files) do texts[#texts + 1] = f.name .. "\n" .. f.text end
  local key = M.hash(table.concat(texts) .. read_all(runtime) .. read_all(headers) .. read_all({ driver })
    .. version.string .. cid
    .. (os.getenv("CFLAGS") or ""))
  local cache = M.cache_dir()
  local entry = ("%s/tune-%s-%s"):format(cache, name, key)
  if path.isfile(entry .. "/attn_tune") then return entry .. "/attn_tune", false end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  local tmp = ("%s/.build-tune-%s-%s"):format(cache, name, util.unique_suffix())
  ok, err = util.makepath(tmp)
  if not ok then return nil, err end
  local q = util.shell_quote
  local units = {}
  for _, f in ipairs(files) do
    local w, werr = util.write_atomic(tmp .. "/" .. f.name, f.text)
    if w == nil then
      dir.rmtree(tmp)
      return nil, werr
    end
    if f.name:match("%.c$") then units[#units + 1] = q(tmp .. "/" .. f.name) end
  end
  for _, src in ipairs(runtime) do units[#units + 1] = q(src) end
  units[#units + 1] = q(driver)
  local cflags = "-std=c99 -O2 -D_POSIX_C_SOURCE=200809L " .. (os.getenv("CFLAGS") or "")
  local function compile(omp)
    return util.run_capture(("%s %s%s -I%s -I%s %s -o %s -lm"):format(q(M.compiler()), cflags, omp, q(tmp), q(rt),
      table.concat(units, " "), q(tmp .. "/attn_tune")))
  end
  local built, out = compile(" -fopenmp")
  if not built then built, out = compile("") end -- a compiler without OpenMP: single-threaded kernels
  if not built or not path.isfile(tmp .. "/attn_tune") then
    dir.rmtree(tmp)
    return nil, ("compiling the tuning candidates of %s with '%s' failed: %s"):format(name, M.compiler(),
      built and "it produced no program (is CC a C compiler?)" or M.first_error(out))
  end
  local published, perr = publish(tmp, entry, "attn_tune")
  if not published then return nil, perr end
  return entry .. "/attn_tune", true
end

--- Builds (or finds) the tool of `attngen plot mask` for a plan: the
-- runtime, the reference and runtime/tools/attn_mask_main.c with a one-line
-- unit that defines attn_mask_spec from the plan's spec_fields (the
-- descriptor's own initializer, so every rule of the spec reaches the
-- reference), no kernel.  Cached like the tools, keyed by every input.
-- Returns the executable's path, or nil, err.
function M.ensure_mask_tool(plan)
  local cid, cerr = compiler_id()
  if not cid then return nil, cerr end
  local rt = util.root .. "/runtime"
  local sources = { rt .. "/attn_runtime.c", rt .. "/attn_reference.c", rt .. "/tools/attn_mask_main.c" }
  local headers = { rt .. "/attn_runtime.h", rt .. "/attn_reference.h" }
  local lines = { '#include "attn_runtime.h"', "const attn_spec attn_mask_spec = {" }
  for i, fld in ipairs(plan.spec_fields) do
    lines[#lines + 1] = ("    .%s = %s%s"):format(fld[1], fld[2], i < #plan.spec_fields and "," or "")
  end
  lines[#lines + 1] = "};"
  local spec_text = table.concat(lines, "\n") .. "\n"
  local key = M.hash(spec_text .. read_all(sources) .. read_all(headers) .. version.string .. cid
    .. (os.getenv("CFLAGS") or ""))
  local cache = M.cache_dir()
  local entry = ("%s/mask-%s-%s"):format(cache, plan.name, key)
  if path.isfile(entry .. "/attn_mask") then return entry .. "/attn_mask" end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  local tmp = ("%s/.build-mask-%s-%s"):format(cache, plan.name, util.unique_suffix())
  ok, err = util.makepath(tmp)
  if not ok then return nil, err end
  local w, werr = util.write_atomic(tmp .. "/attn_mask_spec.c", spec_text)
  if w == nil then
    dir.rmtree(tmp)
    return nil, werr
  end
  local q = util.shell_quote
  local units = { q(tmp .. "/attn_mask_spec.c") }
  for _, src in ipairs(sources) do units[#units + 1] = q(src) end
  local cflags = "-std=c99 -O1 -D_POSIX_C_SOURCE=200809L " .. (os.getenv("CFLAGS") or "")
  local built, out = util.run_capture(("%s %s -I%s %s -o %s -lm"):format(q(M.compiler()), cflags, q(rt),
    table.concat(units, " "), q(tmp .. "/attn_mask")))
  if not built or not path.isfile(tmp .. "/attn_mask") then
    dir.rmtree(tmp)
    return nil, ("compiling the mask tool of %s with '%s' failed: %s"):format(plan.name, M.compiler(),
      built and "it produced no program (is CC a C compiler?)" or M.first_error(out))
  end
  local published, perr = publish(tmp, entry, "attn_mask")
  if not published then return nil, perr end
  return entry .. "/attn_mask"
end

return M
