--- Compiling a config's kernel with the runtime and the tools (run, check,
-- bench) into the cache, keyed by a hash of the generated source, the
-- generator version, the compiler and its flags (M.key).  The runtime's objects and the tools'
-- mains are the same for every config: they are compiled once into a cache
-- entry of their own (runtime-KEY), so a config's build compiles its kernel
-- and links; the compiler runs for several sources at once.
--
-- Concurrency: an entry is built in a private temporary folder and renamed
-- into place; a rename that loses the race finds the winner's folder and
-- uses it.  A folder in the cache is therefore always complete.
local path = require("pl.path")
local dir = require("pl.dir")
local lfs = require("lfs")
local kernel_files = require("kernel_files")
local util = require("util")
local version = require("version")

local M = {}

M.TOOLS = { "run", "check", "bench" }

-- the runtime's units every tool links (the verification harness and each
-- family's cases: docs/architecture.md, "Runtime and tools"), and the
-- headers they include besides attn_runtime.h and attn_reference.h
local RUNTIME_SOURCES = { "attn_runtime.c", "attn_reference.c", "attn_npy.c", "attn_verify.c",
  "attn_cases_sdpa.c", "attn_cases_linear.c", "attn_cases_classic.c",
  "attn_cases_paged.c", "attn_cases_sdpa_bwd.c" }
local RUNTIME_HEADERS = { "attn_cases.h", "attn_cases_qkv.h", "attn_cpu_profiles.h" }
-- a tool's unit besides its main (runtime/tools/), linked into it alone;
-- the bench's OpenBLAS baselines are compiled and linked where OpenBLAS is
local TOOL_PARTS = { bench = { "attn_bench_peak.c" } }
-- a tool's generated units, by the generator module that renders each
-- (render() its C text, FILE its name), compiled into the runtime entry
-- beside the tool's parts: the bench's peak probes (probes.lua)
local TOOL_GENERATED = { bench = { "probes" } }
local TOOL_HEADERS = { "attn_tool_inputs.h", "attn_bench.h" }
local BENCH_BLAS = "attn_bench_blas.c"

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

--- This process's id (the shell's parent), for build locks.
local own_pid
local function pid()
  if not own_pid then
    local p = io.popen("echo $PPID")
    own_pid = p and tonumber(p:read("*l") or "") or 0
    if p then p:close() end
  end
  return own_pid
end

--- A private folder in the cache for one build of what: its name holds this
-- process's id, so that a later build can tell a folder whose process is
-- gone (killed while it built) from one still being written (sweep).
local function private_dir(cache, what)
  local tmp = ("%s/.build-%s-p%d-%s"):format(cache, what, pid(), util.unique_suffix())
  local ok, err = util.makepath(tmp)
  if not ok then return nil, err end
  return tmp
end

--- Whether process n is gone.
local function gone(n)
  return not util.run_capture(("kill -0 %d"):format(n))
end

--- Removes what builds killed while they ran left in the cache: private
-- folders (private_dir) and build locks whose process is gone.  A folder or
-- lock of a live process, or one whose process cannot be told, is kept.
local function sweep(cache)
  local ok, iter, state = pcall(lfs.dir, cache)
  if not ok then return end
  local dead = {}
  for name in iter, state do
    local n = name:match("^%.build%-.*%-p(%d+)%-[^%-]+$")
    if n then
      dead[#dead + 1] = { cache .. "/" .. name, tonumber(n) }
    elseif name:match("%.lock$") then
      local holder = (util.read_file(cache .. "/" .. name .. "/pid") or ""):match("%d+")
      if holder then dead[#dead + 1] = { cache .. "/" .. name, tonumber(holder) } end
    end
  end
  for _, d in ipairs(dead) do
    if d[2] ~= pid() and gone(d[2]) then dir.rmtree(d[1]) end
  end
end

--- Whether the build lock lock is abandoned: its process is gone, or it
-- has held no pid for 10 seconds (its process died between the mkdir and
-- the write).
local function lock_abandoned(lock)
  local holder = tonumber((util.read_file(lock .. "/pid") or ""):match("%d+") or "")
  if holder then return gone(holder) end
  local attr = lfs.attributes(lock)
  return attr ~= nil and os.time() - attr.modification > 10
end

--- Builds a cache entry once however many processes ask at the same time:
-- the one that creates entry.lock (an atomic mkdir) runs build(); the
-- others wait until the entry is complete (it holds marker), or the lock is
-- released or abandoned, and look again.  Returns what build() returns, or
-- entry.
local function build_once(entry, marker, build)
  local lock = entry .. ".lock"
  while true do
    if path.isfile(entry .. "/" .. marker) then return entry end
    if lfs.mkdir(lock) then
      util.write_atomic(lock .. "/pid", tostring(pid()))
      sweep(path.dirname(entry))
      local ok, a, b = pcall(build)
      os.remove(lock .. "/pid")
      lfs.rmdir(lock)
      if not ok then error(a, 0) end
      return a, b
    end
    if lock_abandoned(lock) then
      dir.rmtree(lock)
    else
      os.execute("sleep 0.2")
    end
  end
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

--- Compiles several sources at once (one shell, each compiler in the
-- background): jobs is a list of { cmd, obj, optional }.  Returns true; or
-- nil and the output of the first that failed; or nil, "produced no OBJ (is
-- CC a C compiler?)" for one that exited 0 without writing its object.  An
-- optional job's failure is no failure: its object is removed.
local function compile_all(jobs)
  local q = util.shell_quote
  local parts = {}
  for _, job in ipairs(jobs) do
    parts[#parts + 1] = ("(%s; echo $? >%s) >%s 2>&1 &"):format(job.cmd, q(job.obj .. ".rc"), q(job.obj .. ".log"))
  end
  util.run_capture(table.concat(parts, " ") .. " wait")
  local err
  for _, job in ipairs(jobs) do
    local rc = (util.read_file(job.obj .. ".rc") or ""):match("%d+")
    if job.optional then
      if rc ~= "0" then os.remove(job.obj) end
    elseif not err and rc ~= "0" then
      err = util.read_file(job.obj .. ".log") or ""
      if err == "" then err = "exit code " .. tostring(rc) end
    elseif not err and not path.isfile(job.obj) then
      err = ("produced no %s (is CC a C compiler?)"):format(path.basename(job.obj))
    end
    os.remove(job.obj .. ".rc")
    os.remove(job.obj .. ".log")
  end
  if err then return nil, err end
  return true
end

--- The user's compiler flags ($CFLAGS), added to the build cache's own.
function M.user_flags() return os.getenv("CFLAGS") or "" end

local function cflags() return "-std=c99 -O2 -D_POSIX_C_SOURCE=200809L " .. M.user_flags() end

--- The key of a cache entry built from inputs (the text of everything it
-- compiles) by the compiler whose --version line is cid: the generator's
-- version, that line, the compiler command ($CC) and the user's flags are
-- part of it, so that no entry serves another compiler or other flags.
function M.key(inputs, cid)
  return M.hash(inputs .. "\n" .. version.string .. "\n" .. cid .. "\n" .. M.compiler() .. "\n" .. M.user_flags())
end

-- Precompiled headers.  A kernel's ISA parts read their intrinsics header
-- (immintrin.h alone takes gcc about half a second to parse, a quarter of
-- an AVX-512 part's compile), so the runtime entry holds, per intrinsics
-- header of the ISA registry, the headers a kernel's source includes
-- (lib/includes) precompiled with the entry's compiler and flags, and a
-- part that includes that header is compiled with it forced in first.  The
-- generated file stays plain C: it includes the same headers, which their
-- include guards then skip.  gcc finds NAME.h.gch beside the NAME.h it is
-- given with -include and reads NAME.h itself where it refuses the .gch;
-- clang takes the .pch with -include-pch (made from standard input, so
-- that it names no file of the private build folder, which is renamed);
-- a compiler that makes neither builds without, and a kernel whose
-- compile with one fails is compiled again without (build_tools).

--- The intrinsics headers of the ISA registry, each once, with their
-- architecture's guard: { header, guard }.
local function pch_list()
  local isa = require("isa")
  local list, seen = {}, {}
  for _, name in ipairs(isa.order) do
    local m = isa.get(name)
    if m and m.include and not seen[m.include] then
      seen[m.include] = true
      list[#list + 1] = { header = m.include, guard = m.arch_guard or "1" }
    end
  end
  return list
end

--- The header precompiled for intrinsics header h (pch_list): its file
-- name and text.
local function pch_source(h)
  local name = "pch-" .. h.header:gsub("%.h$", ""):gsub("[^%w]", "_") .. ".h"
  -- (none made for another architecture's header: the #error)
  return name, ("#include <math.h>\n#include <stdint.h>\n#include <string.h>\n#ifdef _OPENMP\n#include <omp.h>\n"
    .. "#endif\n#if %s\n#include <%s>\n#else\n#error another architecture\n#endif\n"):format(h.guard, h.header)
end

local function is_clang(cid) return cid:lower():find("clang", 1, true) ~= nil end

--- The jobs that precompile the headers into folder d (optional ones:
-- compile_all), with common the compiler and its flags.
local function pch_jobs(d, common, cid)
  local q, jobs = util.shell_quote, {}
  for _, h in ipairs(pch_list()) do
    local name, text = pch_source(h)
    if util.write_atomic(d .. "/" .. name, text) ~= nil then
      local cmd
      if is_clang(cid) then
        cmd = ("%s -x c-header - -o %s <%s"):format(common, q(d .. "/" .. name .. ".pch"), q(d .. "/" .. name))
        jobs[#jobs + 1] = { cmd = cmd, obj = d .. "/" .. name .. ".pch", optional = true }
      else
        cmd = ("%s -x c-header %s -o %s"):format(common, q(d .. "/" .. name), q(d .. "/" .. name .. ".gch"))
        jobs[#jobs + 1] = { cmd = cmd, obj = d .. "/" .. name .. ".gch", optional = true }
      end
    end
  end
  return jobs
end

--- The option that forces the precompiled headers of a build part in
-- (runtime entry shared) whose variants include intrinsics header, or "".
local function pch_option(shared, header, cid)
  if not header then return "" end
  local name = pch_source({ header = header, guard = "1" })
  local q = util.shell_quote
  if is_clang(cid) then
    local f = shared .. "/" .. name .. ".pch"
    return path.isfile(f) and " -include-pch " .. q(f) or ""
  end
  return path.isfile(shared .. "/" .. name .. ".gch") and " -include " .. q(shared .. "/" .. name) or ""
end

--- The generated units of tool t: { {file, text} ... } (TOOL_GENERATED).
local function generated_units(t)
  local units = {}
  for _, m in ipairs(TOOL_GENERATED[t] or {}) do
    local mod = require(m)
    units[#units + 1] = { file = mod.FILE, text = mod.render() }
  end
  return units
end

--- The text the shared objects are made of: the runtime's sources and
-- headers (runtime_inputs, below) and the generated units, for the keys.
local runtime_inputs
local function runtime_text()
  local parts = { read_all(runtime_inputs()) }
  for _, t in ipairs(M.TOOLS) do
    for _, u in ipairs(generated_units(t)) do parts[#parts + 1] = u.text end
  end
  return table.concat(parts)
end

--- The inputs of the objects every config's tools share (runtime/).
function runtime_inputs()
  local rt = util.root .. "/runtime"
  local inputs = {}
  for _, f in ipairs(RUNTIME_SOURCES) do
    inputs[#inputs + 1] = rt .. "/" .. f
    inputs[#inputs + 1] = rt .. "/" .. f:gsub("%.c$", ".h") -- a header change rebuilds too
  end
  for _, h in ipairs(RUNTIME_HEADERS) do inputs[#inputs + 1] = rt .. "/" .. h end
  for _, t in ipairs(M.TOOLS) do
    inputs[#inputs + 1] = rt .. "/tools/attn_" .. t .. "_main.c"
    for _, f in ipairs(TOOL_PARTS[t] or {}) do inputs[#inputs + 1] = rt .. "/tools/" .. f end
  end
  for _, h in ipairs(TOOL_HEADERS) do inputs[#inputs + 1] = rt .. "/tools/" .. h end
  inputs[#inputs + 1] = rt .. "/tools/" .. BENCH_BLAS
  inputs[#inputs + 1] = rt .. "/tools/attn_entry.c"
  return inputs
end

--- Builds (or finds) what the tools of every config share, once per
-- compiler, flags and runtime sources: the runtime's objects and the tools'
-- mains (the bench's also with its OpenBLAS baseline, where OpenBLAS
-- compiles), with or without OpenMP, in cache/runtime-KEY/.  A config's
-- build then compiles only its kernel.  Returns the folder, or nil, err.
local build_runtime
local function ensure_runtime(cid, openmp)
  local pchs = {}
  for _, h in ipairs(pch_list()) do pchs[#pchs + 1] = select(2, pch_source(h)) end
  local key = M.key(runtime_text() .. blas_probe() .. (openmp and " -fopenmp" or "") .. table.concat(pchs), cid)
  local cache = M.cache_dir()
  local entry = ("%s/runtime-%s"):format(cache, key)
  if path.isfile(entry .. "/complete") then return entry end
  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  return build_once(entry, "complete", function() return build_runtime(cache, entry, openmp, cid) end)
end

--- Compiles the shared objects and the precompiled headers into entry
-- (ensure_runtime).
function build_runtime(cache, entry, openmp, cid)
  local tmp, err = private_dir(cache, "runtime")
  if not tmp then return nil, err end
  local q, rt = util.shell_quote, util.root .. "/runtime"
  local common = ("%s %s%s -I%s"):format(q(M.compiler()), cflags(), openmp and " -fopenmp" or "", q(rt))
  local jobs = pch_jobs(tmp, common, cid)
  for _, f in ipairs(RUNTIME_SOURCES) do
    local obj = tmp .. "/" .. f:gsub("%.c$", ".o")
    jobs[#jobs + 1] = { cmd = ("%s -c %s -o %s"):format(common, q(rt .. "/" .. f), q(obj)), obj = obj }
  end
  for _, t in ipairs(M.TOOLS) do
    local obj = ("%s/main_%s.o"):format(tmp, t)
    jobs[#jobs + 1] = { cmd = ("%s -c %s -o %s"):format(common, q(rt .. "/tools/attn_" .. t .. "_main.c"), q(obj)),
      obj = obj }
    for _, f in ipairs(TOOL_PARTS[t] or {}) do
      local pobj = tmp .. "/" .. f:gsub("%.c$", ".o")
      jobs[#jobs + 1] = { cmd = ("%s -c %s -o %s"):format(common, q(rt .. "/tools/" .. f), q(pobj)), obj = pobj }
    end
    for _, u in ipairs(generated_units(t)) do -- written into the entry, compiled there
      local src, uobj = tmp .. "/" .. u.file, tmp .. "/" .. u.file:gsub("%.c$", ".o")
      local w, werr = util.write_atomic(src, u.text)
      if w == nil then
        dir.rmtree(tmp)
        return nil, werr
      end
      jobs[#jobs + 1] = { cmd = ("%s -I%s -c %s -o %s"):format(common, q(rt .. "/tools"), q(src), q(uobj)), obj = uobj }
    end
  end
  local built, out = compile_all(jobs)
  if not built then
    dir.rmtree(tmp)
    return nil, out
  end
  -- the bench with the unfused OpenBLAS baselines, when OpenBLAS's header is there (linked per config)
  local blas, blas_obj = tmp .. "/main_bench_blas.o", tmp .. "/" .. BENCH_BLAS:gsub("%.c$", ".o")
  local with_blas = compile_all({
    { cmd = ("%s -DATTN_HAVE_OPENBLAS -c %s -o %s"):format(common, q(rt .. "/tools/attn_bench_main.c"), q(blas)),
      obj = blas },
    { cmd = ("%s -DATTN_HAVE_OPENBLAS -c %s -o %s"):format(common, q(rt .. "/tools/" .. BENCH_BLAS), q(blas_obj)),
      obj = blas_obj } })
  if not with_blas then -- both or neither
    os.remove(blas)
    os.remove(blas_obj)
  end
  local w, werr = util.write_atomic(tmp .. "/complete", "")
  if w == nil then
    dir.rmtree(tmp)
    return nil, werr
  end
  return publish(tmp, entry, "complete")
end

local build_tools

--- Builds (or finds) the tools for a config.  Returns the entry folder,
-- holding the executables attn_run, attn_check, attn_bench; or nil, err.
-- The kernel is rendered as `generate` writes it (tile = "auto": the tuning
-- file's tiles).
function M.ensure(cfg, display, sets)
  local files, plan = kernel_files.render(cfg, display, sets)
  if not files then return nil, plan end
  local cid, cerr = compiler_id()
  if not cid then return nil, cerr end

  local key = M.key(files[1].text .. files[2].text .. runtime_text() .. blas_probe(), cid)
  local cache = M.cache_dir()
  local entry = ("%s/%s-%s"):format(cache, cfg.name, key)
  if path.isfile(entry .. "/attn_" .. M.TOOLS[#M.TOOLS]) then return entry end
  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  return build_once(entry, "attn_" .. M.TOOLS[#M.TOOLS], function()
    return build_tools(cfg, files, plan, cid, cache, entry)
  end)
end

--- Compiles a config's kernel and links its tools into entry (M.ensure).
function build_tools(cfg, files, plan, cid, cache, entry)
  local rt = util.root .. "/runtime"
  local tmp, err = private_dir(cache, cfg.name)
  if not tmp then return nil, err end
  local function fail(msg)
    dir.rmtree(tmp)
    return nil, msg
  end
  for _, f in ipairs(files) do
    local w, werr = util.write_atomic(tmp .. "/" .. f.name, f.text)
    if w == nil then return fail(werr) end
  end

  local q = util.shell_quote
  -- the kernel and its entry unit (the tools reach the kernel through
  -- attn_entry_kernel, which runtime/tools/attn_entry.c defines from
  -- -DATTN_ENTRY_KERNEL), then a link per tool with the shared objects
  local function build(openmp)
    local shared, serr = ensure_runtime(cid, openmp)
    if not shared then return nil, serr end
    local omp = openmp and " -fopenmp" or ""
    local common = ("%s %s%s -I%s -I%s"):format(q(M.compiler()), cflags(), omp, q(tmp), q(rt))
    -- the kernel in its build parts (0 the dispatch, 1..n the ISA
    -- variants: lib/dispatch), all compiled at once, and the entry unit
    local eobj = tmp .. "/entry.o"
    -- (and a backward pass's, -DATTN_ENTRY_BWD_KERNEL, for kernels with one)
    local bwd_def = plan.backward and (" -DATTN_ENTRY_BWD_KERNEL=" .. q(plan.bwd_kernel)) or ""
    -- (and an sdpa kernel's store of new rows, -DATTN_ENTRY_APPEND, for the bench's --append)
    if plan.append_entry then bwd_def = bwd_def .. " -DATTN_ENTRY_APPEND=" .. q(plan.append_entry) end
    local jobs = { { cmd = ("%s -DATTN_ENTRY_KERNEL=%s%s -c %s -o %s"):format(common, q(plan.kernel), bwd_def,
      q(rt .. "/tools/attn_entry.c"), q(eobj)), obj = eobj } }
    local objs = { q(eobj) }
    -- the intrinsics header each part includes (its variants'), whose
    -- precompiled headers it is compiled with
    local header = {}
    for _, v in ipairs(plan.variants) do
      if v.build_part and v.isa.include then header[v.build_part] = v.isa.include end
    end
    local plain, pch, any = { jobs[1] }, jobs, false
    for k = 0, plan.build_parts do
      local kobj = ("%s/kernel-%d.o"):format(tmp, k)
      local cmd = "%s%s -DATTN_BUILD_PART=%d -c %s -o %s"
      local src = q(tmp .. "/" .. cfg.name .. ".c")
      plain[#plain + 1] = { cmd = cmd:format(common, "", k, src, q(kobj)), obj = kobj }
      local opt = pch_option(shared, header[k], cid)
      any = any or opt ~= ""
      pch[#pch + 1] = { cmd = cmd:format(common, opt, k, src, q(kobj)), obj = kobj }
      objs[#objs + 1] = q(kobj)
    end
    local built, out = compile_all(pch)
    if not built and any then -- again without the precompiled headers, which a compiler may refuse
      built, out = compile_all(plain)
    end
    if not built then return nil, out end
    for _, f in ipairs(RUNTIME_SOURCES) do objs[#objs + 1] = q(shared .. "/" .. f:gsub("%.c$", ".o")) end
    -- mains: the tool's main and its parts (TOOL_PARTS, then TOOL_GENERATED);
    -- the tools link at once, like the compiles
    local function link(mains, libs, exe)
      for i, m in ipairs(mains) do mains[i] = q(m) end
      return ("%s%s %s %s -o %s%s -lm"):format(q(M.compiler()), omp, table.concat(mains, " "),
        table.concat(objs, " "), q(exe), libs)
    end
    local links = {}
    for _, t in ipairs(M.TOOLS) do
      local exe = tmp .. "/attn_" .. t
      local parts = {}
      for _, f in ipairs(TOOL_PARTS[t] or {}) do parts[#parts + 1] = shared .. "/" .. f:gsub("%.c$", ".o") end
      for _, u in ipairs(generated_units(t)) do parts[#parts + 1] = shared .. "/" .. u.file:gsub("%.c$", ".o") end
      local function with_parts(mains)
        for _, p in ipairs(parts) do mains[#mains + 1] = p end
        return mains
      end
      local job = { obj = exe, plain = link(with_parts({ shared .. "/main_" .. t .. ".o" }), "", exe) }
      job.cmd = job.plain
      -- the bench adds the unfused OpenBLAS baselines when OpenBLAS links
      -- (-ldl: its look-up of cblas_sbgemm; part of libc from glibc 2.34 on)
      local blas_obj = shared .. "/" .. BENCH_BLAS:gsub("%.c$", ".o")
      if t == "bench" and path.isfile(shared .. "/main_bench_blas.o") and path.isfile(blas_obj) then
        job.cmd = link(with_parts({ shared .. "/main_bench_blas.o", blas_obj }), " -lopenblas -ldl", exe)
      end
      links[#links + 1] = job
    end
    if not compile_all(links) then -- again without OpenBLAS, where the bench did not link with it
      for _, job in ipairs(links) do job.cmd = job.plain end
      local linked, lout = compile_all(links)
      if not linked then return nil, lout end
    end
    return true
  end
  if not build(true) then
    local built, out = build(false) -- a compiler without OpenMP still builds a single-threaded kernel
    if not built then
      if tostring(out):match("^produced no ") then return fail(("compiling %s with '%s' %s"):format(cfg.name,
        M.compiler(), out)) end
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
  local headers = { rt .. "/attn_runtime.h", rt .. "/attn_cpu_profiles.h", rt .. "/attn_reference.h",
    rt .. "/tools/attn_tool_inputs.h" }
  local texts = {}
  for _, f in ipairs(files) do texts[#texts + 1] = f.name .. "\n" .. f.text end
  local key = M.key(table.concat(texts) .. read_all(runtime) .. read_all(headers) .. read_all({ driver }), cid)
  local cache = M.cache_dir()
  local entry = ("%s/tune-%s-%s"):format(cache, name, key)
  if path.isfile(entry .. "/attn_tune") then return entry .. "/attn_tune", false end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  sweep(cache)
  local tmp
  tmp, err = private_dir(cache, "tune-" .. name)
  if not tmp then return nil, err end
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
  local function compile(omp)
    return util.run_capture(("%s %s%s -I%s -I%s %s -o %s -lm"):format(q(M.compiler()), cflags(), omp, q(tmp), q(rt),
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
  local headers = { rt .. "/attn_runtime.h", rt .. "/attn_cpu_profiles.h", rt .. "/attn_reference.h" }
  local lines = { '#include "attn_runtime.h"', "const attn_spec attn_mask_spec = {" }
  for _, fld in ipairs(plan.spec_fields) do
    -- RoPE's table of frequencies lives in the kernel's file, which the mask tool does not build:
    -- the visibility rules it draws do not read it
    if fld[1] ~= "rope_inv_freq" then lines[#lines + 1] = ("    .%s = %s,"):format(fld[1], fld[2]) end
  end
  lines[#lines + 1] = "};"
  local spec_text = table.concat(lines, "\n") .. "\n"
  local key = M.key(spec_text .. read_all(sources) .. read_all(headers), cid)
  local cache = M.cache_dir()
  local entry = ("%s/mask-%s-%s"):format(cache, plan.name, key)
  if path.isfile(entry .. "/attn_mask") then return entry .. "/attn_mask" end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  sweep(cache)
  local tmp
  tmp, err = private_dir(cache, "mask-" .. plan.name)
  if not tmp then return nil, err end
  local w, werr = util.write_atomic(tmp .. "/attn_mask_spec.c", spec_text)
  if w == nil then
    dir.rmtree(tmp)
    return nil, werr
  end
  local q = util.shell_quote
  local units = { q(tmp .. "/attn_mask_spec.c") }
  for _, src in ipairs(sources) do units[#units + 1] = q(src) end
  local flags = "-std=c99 -O1 -D_POSIX_C_SOURCE=200809L " .. M.user_flags()
  local built, out = util.run_capture(("%s %s -I%s %s -o %s -lm"):format(q(M.compiler()), flags, q(rt),
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
