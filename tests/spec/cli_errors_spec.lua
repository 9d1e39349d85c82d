-- Every mistake a user can make on the command line, from one table: each
-- case prepares files in a fresh folder, runs bin/attngen there, and must
-- get exit code 2, exactly one line on stderr ("attngen: ...") matching its
-- pattern, nothing on stdout, and a file system as it was: the case's
-- folder unchanged file for file (no output, no *.tmp.* file, what was
-- there untouched) and no cache entry but complete ones.  The run cases
-- build one kernel (t_everything: padding, bias mask, GQA), so #slow.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")

local EXIT_USAGE = 2
local EVERYTHING = helper.root .. "/configs/test/t_everything.lua"
-- t_everything: heads_q 4, heads_kv 2, head_dim 72 (= head_dim_v); the
-- inputs below: batch 2, seq_q 3, seq_k 5
local B, LQ, LK, HQ, HKV, D = 2, 3, 5, 4, 2, 72

--- Writes a .npy file: descr ('<f4', ...), shape (a list), data (bytes;
-- default: zeros), header_text (default: the one numpy writes).
local function npy(path, descr, shape, data, header_text)
  local count, size = 1, tonumber(descr:match("%d+$")) or 1
  for _, n in ipairs(shape) do count = count * n end
  local dims = {}
  for i, n in ipairs(shape) do dims[i] = tostring(n) end
  local tuple = #dims == 1 and ("(" .. dims[1] .. ",)") or ("(" .. table.concat(dims, ", ") .. ")")
  local h = header_text or ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }"):format(descr, tuple)
  h = h .. (" "):rep((64 - (10 + #h + 1) % 64) % 64) .. "\n"
  return helper.write_file(path, "\147NUMPY\1\0" .. string.char(#h % 256, math.floor(#h / 256)) .. h
    .. (data or ("\0"):rep(count * size)))
end

--- Little-endian int32 bytes of small non-negative integers.
local function i32(...)
  local out = {}
  for i, v in ipairs({ ... }) do
    out[i] = string.char(v % 256, math.floor(v / 256) % 256, math.floor(v / 65536) % 256, 0)
  end
  return table.concat(out)
end

--- Good inputs for t_everything in folder d.
local function inputs(d)
  npy(d .. "/q.npy", "<f4", { B, LQ, HQ, D })
  npy(d .. "/k.npy", "<f4", { B, LK, HKV, D })
  npy(d .. "/v.npy", "<f4", { B, LK, HKV, D })
  npy(d .. "/s.npy", "<i4", { B }, i32(LK, 2))
  npy(d .. "/m.npy", "<f4", { LQ, LK })
end

--- `attngen run t_everything` on the inputs, with some replaced ({ q = "x.npy" })
-- and extra arguments appended.
local function run(replace, ...)
  replace = replace or {}
  local argv = { "run", EVERYTHING }
  for _, f in ipairs({ { "--q", "q" }, { "--k", "k" }, { "--v", "v" }, { "--seqlens-k", "s" }, { "--mask", "m" } }) do
    local file = replace[f[2]]
    if file == nil then file = f[2] .. ".npy" end
    if file then
      argv[#argv + 1] = f[1]
      argv[#argv + 1] = file
    end
  end
  for _, a in ipairs({ ... }) do argv[#argv + 1] = a end
  if not replace.no_output then
    argv[#argv + 1] = "-o"
    argv[#argv + 1] = "o.npy"
  end
  return argv
end

--- Good inputs and new rows (2 a sequence) for appending to t_everything's cache in folder d.
local function append_inputs(d)
  inputs(d)
  npy(d .. "/s.npy", "<i4", { B }, i32(3, 1))
  npy(d .. "/kn.npy", "<f4", { B, 2, HKV, D })
  npy(d .. "/vn.npy", "<f4", { B, 2, HKV, D })
end

-- t_linear_state (kind = "linear", causal, state): heads 2 (= heads_kv),
-- head_dim 16; the inputs below: batch 2, seq 3
local LINEAR = helper.root .. "/configs/test/t_linear_state.lua"

--- Good inputs for t_linear_state in folder d, a state among them.
local function linear_inputs(d)
  npy(d .. "/q.npy", "<f4", { B, LQ, 2, 16 })
  npy(d .. "/k.npy", "<f4", { B, LQ, 2, 16 })
  npy(d .. "/v.npy", "<f4", { B, LQ, 2, 16 })
  npy(d .. "/s0.npy", "<f4", { B, 2, 16, 16 })
  npy(d .. "/z0.npy", "<f4", { B, 2, 16 })
end

--- `attngen run t_linear_state` on those inputs, with extra arguments.
local function linear_run(...)
  local argv = { "run", LINEAR, "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "-o", "o.npy" }
  for _, a in ipairs({ ... }) do argv[#argv + 1] = a end
  return argv
end

-- t_additive (kind = "additive"): query_dim 16, key_dim 32, attn_dim 24;
-- the inputs below: batch 2, seq_q 3, seq_k 5
local ADDITIVE = helper.root .. "/configs/test/t_additive.lua"
local DS, DH, DA = 16, 32, 24

--- Good inputs for t_additive in folder d (W_h and U both), then, with
-- `name`, one of them rewritten: additive_inputs(name, descr, shape).
local function additive_inputs(name, descr, shape)
  return function(d)
    npy(d .. "/s.npy", "<f4", { B, LQ, DS })
    npy(d .. "/h.npy", "<f4", { B, LK, DH })
    npy(d .. "/ws.npy", "<f4", { DA, DS })
    npy(d .. "/wh.npy", "<f4", { DA, DH })
    npy(d .. "/u.npy", "<f4", { B, LK, DA })
    npy(d .. "/va.npy", "<f4", { DA })
    if name then npy(d .. "/" .. name, descr, shape) end
  end
end

--- `attngen run t_additive` on those inputs (W_h, not U), some replaced
-- ({ wh = false, u = "u.npy" }), and extra arguments appended.
local function additive_run(replace, ...)
  replace = replace or {}
  local argv = { "run", ADDITIVE }
  for _, f in ipairs({ { "--s", "s" }, { "--h", "h" }, { "--w-s", "ws" }, { "--w-h", "wh" }, { "--u", "u" },
      { "--v-attn", "va" } }) do
    local file = replace[f[2]]
    if file == nil and f[2] ~= "u" then file = f[2] .. ".npy" end
    if file then
      argv[#argv + 1] = f[1]
      argv[#argv + 1] = file
    end
  end
  for _, a in ipairs({ ... }) do argv[#argv + 1] = a end
  argv[#argv + 1] = "-o"
  argv[#argv + 1] = "c.npy"
  return argv
end

-- t_luong_concat (kind = "luong", score = "concat"): query_dim 10, key_dim
-- 21, attn_dim 15, bias, padding, a bool mask; W [attn_dim][key_dim + query_dim]
local CONCAT = helper.root .. "/configs/test/t_luong_concat.lua"
local function concat_inputs(w_shape)
  return function(d)
    npy(d .. "/s.npy", "<f4", { B, LQ, 10 })
    npy(d .. "/h.npy", "<f4", { B, LK, 21 })
    npy(d .. "/w.npy", "<f4", w_shape)
    npy(d .. "/va.npy", "<f4", { 15 })
    npy(d .. "/b.npy", "<f4", { 15 })
    npy(d .. "/sl.npy", "<i4", { B }, i32(LK, 2))
    npy(d .. "/m.npy", "|b1", { LQ, LK })
  end
end
local CONCAT_RUN = { "run", CONCAT, "--s", "s.npy", "--h", "h.npy", "--w", "w.npy", "--v-attn", "va.npy",
  "--b", "b.npy",
  "--seqlens-k", "sl.npy", "--mask", "m.npy", "-o", "c.npy" }

--- Inputs, then one of them rewritten: with(name, descr, shape, data, header).
local function with(name, descr, shape, data, header)
  return function(d)
    inputs(d)
    npy(d .. "/" .. name, descr, shape, data, header)
  end
end

--- Inputs, then one file replaced by the given bytes.
local function raw(name, bytes)
  return function(d)
    inputs(d)
    helper.write_file(d .. "/" .. name, type(bytes) == "function" and bytes(d) or bytes)
  end
end

local function config(name, src)
  return function(d) helper.write_file(d .. "/" .. name, src) end
end

--- A folder the tools cannot write into.  chmod 0555 stops every user but
-- root; for root (tests in containers often run as root) a path under a
-- regular file is unwritable for everyone.  Returns its path relative to d.
local function unwritable(d)
  assert(require("pl.dir").makepath(d .. "/readonly"))
  assert(os.execute("chmod 0555 " .. helper.quote(d .. "/readonly")))
  local f = io.open(d .. "/readonly/probe", "w")
  if not f then return "readonly" end
  f:close()
  os.remove(d .. "/readonly/probe")
  helper.write_file(d .. "/a_file", "a regular file\n")
  return "a_file/sub"
end

--- A script that prints a version and then fails every compilation (or,
-- with succeed, exits 0 and writes nothing).
local function fake_cc(d, succeed)
  local p = helper.write_file(d .. "/fakecc", "#!/bin/sh\n"
    .. 'if [ "$1" = --version ]; then echo "fakecc 1.0"; exit 0; fi\n'
    .. (succeed and "exit 0\n" or 'echo "fakecc: error: this is not a compiler" >&2\nexit 1\n'))
  assert(os.execute("chmod +x " .. helper.quote(p)))
  return p
end

--- Post-conditions beyond the ones every case checks.
local function no_new_cache_entry(_, before, after)
  for name in pairs(after) do assert.truthy(before[name], "a new cache entry: " .. name) end
end
local function holds(file, content)
  return function(d) assert.equal(content, helper.read_file(d .. "/" .. file), file .. " changed") end
end

-- name; setup(d, ctx) writes files into d (ctx: a table for argv); argv(ctx)
-- or a list; env (values may be functions of d); code: the exit code (2
-- unless given); msg: a Lua pattern the message after "attngen: " must
-- match; after(d, cache entries before, after): a further post-condition.
local CASES = {
  -- the config argument
  { name = "missing config file", argv = { "generate", "no/such/config.lua" },
    msg = "^no/such/config%.lua: no such config file$" },
  { name = "missing config file (run)", setup = inputs, argv = { "run", "my_model.lua", "--q", "q.npy", "--k", "k.npy",
    "--v", "v.npy", "-o", "o.npy" }, msg = "^my_model%.lua: no such config file$" },
  { name = "unknown preset, did you mean", argv = { "generate", "lama3_8b" },
    msg = "^unknown preset 'lama3_8b' %(did you mean 'llama3_8b'%?%) %(presets: .*gpt2" },
  { name = "unknown preset (run)", argv = { "run", "gtp2", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy",
    "-o", "o.npy" }, msg = "^unknown preset 'gtp2' %(did you mean 'gpt2'%?%)" },
  { name = "unknown key in a file", setup = config("c.lua", 'return {\n  name = "c",\n  heads_q = 4,\n'
    .. '  head_dim = 8,\n  casual = true,\n}\n'), argv = { "generate", "c.lua" },
    msg = "^c%.lua:5: unknown key 'casual' %(did you mean 'causal'%?%)" },
  { name = "unknown key in --set", argv = { "generate", "gpt2", "--set", "head_dmi=3" },
    msg = "^%-%-set head_dmi=3: unknown key 'head_dmi' %(did you mean 'head_dim'%?%)$" },
  { name = "out of range: heads_q = 0", argv = { "generate", "gpt2", "--set", "heads_q=0" },
    msg = "^%-%-set heads_q=0: 'heads_q' must be in 1%.%.%d+, got 0$" },
  { name = "out of range: head_dim = 513", setup = config("c.lua", 'return {\n  name = "c",\n  heads_q = 4,\n'
    .. '  head_dim = 513,\n}\n'), argv = { "generate", "c.lua" }, msg = "^c%.lua:4: 'head_dim' must be in 1%.%.512" },
  { name = "out of range: head_dim_v = 0", argv = { "generate", "gpt2", "--set", "head_dim_v=0" },
    msg = "'head_dim_v' must be in 1%.%.512, got 0" },
  { name = "out of range: heads_kv = 0", argv = { "generate", "gpt2", "--set", "heads_kv=0" },
    msg = "'heads_kv' must be in 1%.%." },
  { name = "out of range: scale = -1", argv = { "generate", "gpt2", "--set", "scale=-1" },
    msg = "'scale' must be a finite number > 0, got %-1" },
  { name = "out of range: scale = inf", argv = { "generate", "gpt2", "--set", "scale=1/0" },
    msg = "'scale' must be a finite number > 0" },
  { name = "out of range: softcap = 0", argv = { "generate", "gpt2", "--set", "softcap=0" },
    msg = "'softcap' must be a finite number > 0, got 0" },
  { name = "out of range: global_tokens = -1", argv = { "generate", "gpt2", "--set", "global_tokens=-1" },
    msg = "'global_tokens' must be in 0%.%." },
  { name = "out of range: window.left = -2", argv = { "generate", "gpt2", "--set", "window={left=-2,right=0}" },
    msg = "'window%.left' must be in %-1%.%." },
  { name = "out of range: tile.kv not a multiple of 16", argv = { "run", "gpt2", "--set", "tile={q=16,kv=24}",
    "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "-o", "o.npy" }, msg = "multiple of 16" },
  { name = "wrong type: causal = 1", argv = { "check", "gpt2", "--set", "causal=1" }, msg = "'causal'" },
  { name = "unknown alignment: causal = \"top-left\"", argv = { "generate", "gpt2", "--set", 'causal="top-left"' },
    msg = "^%-%-set causal=\"top%-left\": 'causal' must be true or false, \"bottom_right\" or \"top_left\", "
      .. "got \"top%-left\"$" },
  { name = "out of range: chunk = 0", argv = { "generate", "gpt2", "--set", "chunk=0" },
    msg = "^%-%-set chunk=0: 'chunk' must be in 1%.%.1073741824, got 0$" },
  { name = "wrong type: chunk = 2.5", argv = { "generate", "gpt2", "--set", "chunk=2.5" },
    msg = "'chunk' must be an integer in 1%.%.1073741824, got 2%.5" },
  { name = "sparse: summary past the block", argv = { "generate", "gpt2", "--set",
    'sparse={pattern="fixed",block=8,summary=9}' },
    msg = "^%-%-set sparse={pattern=\"fixed\",block=8,summary=9}: 'sparse%.summary' must be in 1%.%.8, got 9$" },
  { name = "sparse: unknown field", argv = { "generate", "gpt2", "--set", 'sparse={pattern="strided",strid=4}' },
    msg = "'sparse' has unknown field 'strid' %(allowed: pattern, stride%); did you mean 'stride'%?$" },
  { name = "heads_q not divisible by heads_kv", setup = config("c.lua", 'return {\n  name = "c",\n'
    .. '  heads_q = 6,\n  heads_kv = 4,\n  head_dim = 8,\n}\n'), argv = { "generate", "c.lua" },
    msg = "^c%.lua:4: 'heads_kv' %(4%) must divide 'heads_q' %(6%)$" },
  { name = "heads_kv via --set does not divide", argv = { "bench", "llama3_8b", "--set", "heads_kv=5" },
    msg = "^%-%-set heads_kv=5: 'heads_kv' %(5%) must divide 'heads_q' %(32%)$" },
  { name = "window and sliding_window together", argv = { "generate", "mistral_7b", "--set",
    "window={left=3,right=0}" }, msg = "give either 'window' or 'sliding_window', not both" },
  { name = "unknown ISA in the config", argv = { "generate", "gpt2", "--set", 'isa={"sse9"}' },
    msg = "unknown ISA 'sse9' in 'isa' %(known: avx512bf16, avx512, avx2, neon, scalar%)" },
  { name = "bad --set literal", argv = { "generate", "gpt2", "--set", "heads_q=8x" },
    msg = "^%-%-set heads_q=8x:.*malformed number" },
  { name = "--set without a value", argv = { "generate", "gpt2", "--set", "causal" },
    msg = "^%-%-set causal: expected key=value" },
  { name = "--set that is not a literal", argv = { "generate", "gpt2", "--set", "heads_q=os.exit(0)" },
    msg = "^%-%-set heads_q=os%.exit%(0%)" },
  { name = "--set of an unterminated table", argv = { "generate", "gpt2", "--set", "window={left=3" },
    msg = "^%-%-set window={left=3" },
  { name = "a config that runs forever", setup = config("c.lua", "while true do end\n"), argv = { "generate", "c.lua" },
    msg = "^c%.lua:1: config runs too long" },
  { name = "a config that reads a file", setup = config("c.lua", 'local f = io.open("/etc/passwd")\n'),
    argv = { "run", "c.lua", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "-o", "o.npy" },
    msg = "^c%.lua:1: .*'io'" },
  { name = "an unknown option", argv = { "generate", "gpt2", "--ouptut", "x" }, msg = "Did you mean" },
  { name = "an unknown command", argv = { "genrate", "gpt2" }, msg = "genrate" },

  -- the output of generate
  { name = "generate into an unwritable folder",
    setup = function(d, ctx) ctx.out = unwritable(d) end,
    argv = function(ctx) return { "generate", "gpt2", "-o", ctx.out .. "/gen" } end, msg = "gen" },
  { name = "generate over a folder named like an output", setup = function(d)
      assert(require("pl.dir").makepath(d .. "/out/t_d1.c"))
      helper.write_file(d .. "/out/t_d1.h", "the user's own file\n")
    end, argv = { "generate", "gpt2", helper.root .. "/configs/test/t_d1.lua", "-o", "out" },
    msg = "^out/t_d1%.c: exists and is not a regular file", after = holds("out/t_d1.h", "the user's own file\n") },
  { name = "generate with -o a regular file", setup = config("out", "a regular file\n"),
    argv = { "generate", "gpt2", "-o", "out" }, msg = "out" },

  -- the compiler
  { name = "missing compiler", setup = inputs, env = { CC = "/nonexistent/cc" }, argv = run(),
    msg = "^C compiler '/nonexistent/cc' not found or not working", after = no_new_cache_entry },
  { name = "missing compiler (check)", env = { CC = "/nonexistent/cc" }, argv = { "check", "gpt2", "--quick" },
    msg = "^C compiler '/nonexistent/cc' not found" },
  { name = "a compiler that fails", setup = function(d) inputs(d) fake_cc(d) end,
    env = { CC = function(d) return d .. "/fakecc" end }, argv = run(),
    msg = "^compiling t_everything with '.*/fakecc' failed: fakecc: error: this is not a compiler$",
    after = no_new_cache_entry },
  { name = "a compiler that writes nothing", setup = function(d) inputs(d) fake_cc(d, true) end,
    env = { CC = function(d) return d .. "/fakecc" end }, argv = run(),
    msg = "^compiling t_everything with '.*/fakecc' produced no attn_runtime%.o %(is CC a C compiler%?%)$",
    after = no_new_cache_entry },

  -- the inputs of run (the kernel is built once, by the first of these)
  { name = "Q of dtype int16", setup = with("q.npy", "<i2", { B, LQ, HQ, D }), argv = run(),
    msg = "^q%.npy: unsupported dtype '<i2'" },
  { name = "Q of dtype int32", setup = with("q.npy", "<i4", { B, LQ, HQ, D }), argv = run(),
    msg = "^q%.npy: .*int32" },
  { name = "Q of dtype complex64", setup = with("q.npy", "<c8", { B, LQ, HQ, D }), argv = run(),
    msg = "^q%.npy: unsupported dtype '<c8'" },
  { name = "Q big-endian", setup = with("q.npy", ">f4", { B, LQ, HQ, D }), argv = run(), msg = "^q%.npy: .*'>f4'" },
  { name = "Q in Fortran order", setup = with("q.npy", "<f4", { B, LQ, HQ, D }, nil,
    "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4, 72), }"), argv = run(),
    msg = "^q%.npy: Fortran%-order" },
  { name = "Q of rank 5", setup = with("q.npy", "<f4", { 1, B, LQ, HQ, D }), argv = run(),
    msg = "^q%.npy: expected a 4%-D array .*got shape %(1, 2, 3, 4, 72%)$" },
  { name = "Q of rank 1", setup = with("q.npy", "<f4", { D }), argv = run(), msg = "^q%.npy: expected a 4%-D array" },
  { name = "Q with the wrong heads", setup = with("q.npy", "<f4", { B, LQ, HQ + 1, D }), argv = run(),
    msg = "^q%.npy: shape .* heads_q 4" },
  { name = "Q with the wrong head dim", setup = with("q.npy", "<f4", { B, LQ, HQ, D + 1 }), argv = run(),
    msg = "^q%.npy: shape .* head_dim 72" },
  { name = "K with the heads of Q", setup = with("k.npy", "<f4", { B, LK, HQ, D }), argv = run(),
    msg = "^k%.npy: shape .* heads_kv 2" },
  { name = "K of another batch", setup = with("k.npy", "<f4", { B + 1, LK, HKV, D }), argv = run(),
    msg = "^k%.npy: batch 3 does not match" },
  { name = "V with the wrong head dim", setup = with("v.npy", "<f4", { B, LK, HKV, D - 1 }), argv = run(),
    msg = "^v%.npy: shape .* head_dim_v 72" },
  { name = "V shorter than K", setup = with("v.npy", "<f4", { B, LK - 1, HKV, D }), argv = run(),
    msg = "^v%.npy: seq_k 4 does not match" },
  { name = "truncated data", setup = raw("q.npy", function(d)
      local s = helper.read_file(d .. "/q.npy")
      return s:sub(1, #s - 100)
    end), argv = run(), msg = "^q%.npy: truncated" },
  { name = "truncated header", setup = raw("q.npy", "\147NUMPY\1\0\118\0{'descr': '<f4'"), argv = run(),
    msg = "^q%.npy: truncated" },
  { name = "an empty file", setup = raw("k.npy", ""), argv = run(), msg = "^k%.npy: " },
  { name = "bad magic", setup = raw("v.npy", function(d)
      return "XNUMPY" .. helper.read_file(d .. "/v.npy"):sub(7)
    end), argv = run(), msg = "^v%.npy: not a %.npy file" },
  { name = "a text file", setup = raw("q.npy", "not an npy file at all\n"), argv = run(), msg = "^q%.npy: " },
  { name = "trailing bytes", setup = raw("q.npy", function(d)
      return helper.read_file(d .. "/q.npy") .. "tail"
    end), argv = run(), msg = "^q%.npy: trailing data" },
  { name = "a missing input", setup = inputs, argv = run({ v = "nope.npy" }), msg = "^nope%.npy: " },
  { name = "an input that is a folder", setup = function(d)
      inputs(d)
      assert(require("pl.dir").makepath(d .. "/dir.npy"))
    end, argv = run({ k = "dir.npy" }), msg = "^dir%.npy: " },
  { name = "seqlens_k of dtype float32", setup = with("s.npy", "<f4", { B }), argv = run(),
    msg = "^s%.npy: expected int32 or int64 data, got float32$" },
  { name = "seqlens_k of the wrong length", setup = with("s.npy", "<i4", { B + 1 }), argv = run(),
    msg = "^s%.npy: expected shape %(2,%)" },
  { name = "seqlens_k 0-D", setup = with("s.npy", "<i4", {}), argv = run(), msg = "^s%.npy: expected shape %(2,%)" },
  { name = "seqlens_k past seq_k", setup = with("s.npy", "<i4", { B }, i32(LK, LK + 1)), argv = run(),
    msg = "^s%.npy: seqlens_k%[1%] = 6 is outside 0%.%.5" },
  { name = "seqlens_k negative", setup = with("s.npy", "<i4", { B }, i32(1) .. "\255\255\255\255"), argv = run(),
    msg = "^s%.npy: seqlens_k%[1%] = %-1" },
  { name = "no --seqlens-k for a padding config", setup = inputs, argv = run({ s = false }),
    msg = "^%-%-seqlens%-k: required" },
  { name = "no --mask for a mask config", setup = inputs, argv = run({ m = false }), msg = "^%-%-mask: required" },
  { name = "mask of the wrong shape", setup = with("m.npy", "<f4", { LK, LQ }), argv = run(),
    msg = "^m%.npy: shape %(5, 3%) does not match" },
  { name = "mask of the wrong rank", setup = with("m.npy", "<f4", { HQ, LQ, LK }), argv = run(),
    msg = "^m%.npy: shape .* does not match" },
  { name = "a bool mask for a bias config", setup = with("m.npy", "|b1", { LQ, LK }), argv = run(),
    msg = "^m%.npy: dtype bool does not match the config's mask \"bias\"" },

  -- the outputs of run
  { name = "-o into an unwritable folder", setup = function(d, ctx)
      inputs(d)
      ctx.out = unwritable(d)
    end, argv = function(ctx) return run({ no_output = true }, "-o", ctx.out .. "/o.npy") end, msg = "/o%.npy: " },
  { name = "--lse into an unwritable folder keeps the old O", setup = function(d, ctx)
      inputs(d)
      helper.write_file(d .. "/o.npy", "the user's earlier result\n")
      ctx.out = unwritable(d)
    end, argv = function(ctx) return run({}, "--lse", ctx.out .. "/l.npy") end, msg = "/l%.npy: ",
    after = holds("o.npy", "the user's earlier result\n") },
  { name = "-o an existing folder", setup = function(d)
      inputs(d)
      assert(require("pl.dir").makepath(d .. "/o.npy"))
    end, argv = run(), msg = "^o%.npy: exists and is not a regular file" },
  { name = "--lse an existing folder", setup = function(d)
      inputs(d)
      assert(require("pl.dir").makepath(d .. "/l.npy"))
    end, argv = run({}, "--lse", "l.npy"), msg = "^l%.npy: exists and is not a regular file" },
  { name = "-o and --lse the same file", setup = inputs, argv = run({}, "--lse", "o.npy"),
    msg = "^%-%-lse: must differ from %-o$" },
  { name = "--weights for a config without weights", setup = inputs, argv = run({}, "--weights", "w.npy"),
    msg = "^w%.npy: the config 't_everything' has no weights %(weights = true%), so %-%-weights is not accepted$" },
  { name = "--average-heads without --weights", setup = inputs, argv = run({}, "--average-heads"),
    msg = "^%-%-average%-heads: needs %-%-weights" },
  { name = "--sinks for a config without sinks", setup = inputs, argv = run({}, "--sinks", "x.npy"),
    msg = "^x%.npy: the config 't_everything' has no sinks %(sinks = true%), so %-%-sinks is not accepted$" },
  { name = "--q-norm-w for a config without qk_norm", setup = inputs, argv = run({}, "--q-norm-w", "x.npy"),
    msg = "^%-%-q%-norm%-w: the config 't_everything' has no qk_norm, so %-%-q%-norm%-w is not accepted$" },
  { name = "--do for a config without a backward pass", setup = inputs,
    argv = run({}, "--do", "o.npy", "--dq", "a.npy", "--dk", "b.npy", "--dv", "c.npy"),
    msg = "^%-%-do: the config 't_everything' has no backward pass %(backward = true%)$" },
  { name = "--dsinks for a config without a backward pass", setup = inputs, argv = run({}, "--dsinks", "ds.npy"),
    msg = "^%-%-dsinks: the config 't_everything' has no backward pass %(backward = true%), so there is no sinks "
      .. "gradient$" },
  { name = "--drel for a config without a backward pass", setup = inputs, argv = run({}, "--drel", "dt.npy"),
    msg = "^%-%-drel: the config 't_everything' has no backward pass %(backward = true%), so there is no relative "
      .. "position table's gradient$" },
  { name = "--dq-norm-w for a config without a backward pass", setup = inputs, argv = run({}, "--dq-norm-w", "dw.npy"),
    msg = "^%-%-dq%-norm%-w: the config 't_everything' has no backward pass %(backward = true%), so there is no query "
      .. "norm weights' gradient$" },
  { name = "--dropout-p for a config without dropout", setup = inputs, argv = run({}, "--dropout-p", "0.1"),
    msg = "^%-%-dropout%-p: the config 't_everything' has no dropout %(dropout = true%), "
      .. "so %-%-dropout%-p is not accepted$" },
  { name = "--dropout-p outside [0, 1)", setup = inputs, argv = run({}, "--dropout-p", "1.5"),
    msg = "^%-%-dropout%-p: expected a number in %[0, 1%), got '1%.5'$" },
  { name = "--dropout-offset past 2^32 - 1", setup = inputs, argv = run({}, "--dropout-offset", "4294967296"),
    msg = "^%-%-dropout%-offset: expected an integer in 0%.%.4294967295, got '4294967296'$" },
  { name = "-o and --lse the same file, spelled two ways", setup = inputs, argv = run({}, "--lse", "./o.npy"),
    msg = "^%-%-lse: must differ from %-o$" },
  { name = "-o one of the inputs", setup = function(d)
      inputs(d)
      helper.write_file(d .. "/q.orig", helper.read_file(d .. "/q.npy"))
    end, argv = run({ no_output = true }, "-o", "./q.npy"),
    msg = "^%-o: '%./q%.npy' is the %-%-q input; not replacing an input$",
    after = function(d) assert.equal(helper.read_file(d .. "/q.orig"), helper.read_file(d .. "/q.npy")) end },
  { name = "--lse one of the inputs", setup = inputs, argv = run({}, "--lse", "m.npy"),
    msg = "^%-%-lse: 'm%.npy' is the %-%-mask input; not replacing an input$" },
  { name = "no -o", setup = inputs, argv = run({ no_output = true }), msg = "%-o" },
  { name = "--lse for a linear config", setup = linear_inputs, argv = linear_run("--lse", "l.npy"),
    msg = "^%-%-lse: the config 't_linear_state' is linear attention, which has no LSE$" },
  { name = "--state-in for a config without state", setup = inputs, argv = run({}, "--state-in", "q.npy", "k.npy"),
    msg = "^%-%-state%-in: the config 't_everything' has no state %(kind = \"linear\" with state = true%), "
      .. "so it is not accepted$" },
  { name = "--state-in with one file", setup = linear_inputs, argv = linear_run("--state-in", "s0.npy"),
    msg = "^option '%-%-state%-in' requires 2 arguments" },
  { name = "--state-in S and z swapped", setup = linear_inputs, argv = linear_run("--state-in", "z0.npy", "s0.npy"),
    msg = "^z0%.npy: shape %(2, 2, 16%) does not match the config: expected S "
      .. "%[batch%]%[heads_kv%]%[head_dim%]%[head_dim_v%] = %(2, 2, 16, 16%)$" },
  { name = "--state-out over -o", setup = linear_inputs, argv = linear_run("--state-out", "o.npy", "z1.npy"),
    msg = "^%-%-state%-out: must differ from %-o$" },
  { name = "--state-out S and z the same file", setup = linear_inputs,
    argv = linear_run("--state-out", "s1.npy", "./s1.npy"), msg = "^%-%-state%-out: the S and z files must differ$" },
  { name = "--state-out over an input", setup = linear_inputs, argv = linear_run("--state-out", "k.npy", "z1.npy"),
    msg = "^%-%-state%-out: 'k%.npy' is the %-%-k input; not replacing an input$" },

  -- the inputs of run for additive and luong configs (attn_classic_args)
  { name = "additive: W_s of the wrong shape", setup = additive_inputs("ws.npy", "<f4", { DA, DS + 1 }),
    argv = additive_run(),
    msg = "^%-%-w%-s ws%.npy: shape %[24, 17%] does not match %[attn_dim, query_dim%] = %[24, 16%] of the config$" },
  { name = "additive: S with the wrong query_dim", setup = additive_inputs("s.npy", "<f4", { B, LQ, DS + 1 }),
    argv = additive_run(),
    msg = "^%-%-s s%.npy: shape %[2, 3, 17%] does not match %[batch, seq_q, query_dim%] = %[2, 3, 16%] "
      .. "of the config$" },
  { name = "additive: S of rank 1", setup = additive_inputs("s.npy", "<f4", { DS }), argv = additive_run(),
    msg = "^%-%-s s%.npy: expected a 3%-D array %[batch, seq_q, query_dim%] .*got shape %[16%]$" },
  { name = "additive: H of another batch", setup = additive_inputs("h.npy", "<f4", { B + 1, LK, DH }),
    argv = additive_run(),
    msg = "^%-%-h h%.npy: shape %[3, 5, 32%] does not match %[batch, seq_k, key_dim%] = %[2, 5, 32%] of the config "
      .. "and %-%-s s%.npy's shape %[2, 3, 16%]$" },
  { name = "additive: U of another seq_k", setup = additive_inputs("u.npy", "<f4", { B, LK - 1, DA }),
    argv = additive_run({ wh = false, u = "u.npy" }),
    msg = "^%-%-u u%.npy: shape %[2, 4, 24%] does not match %[batch, seq_k, attn_dim%] = %[2, 5, 24%] of the config, "
      .. "%-%-s s%.npy's shape %[2, 3, 16%] and %-%-h h%.npy's shape %[2, 5, 32%]$" },
  { name = "additive: v of int32", setup = additive_inputs("va.npy", "<i4", { DA }), argv = additive_run(),
    msg = "^%-%-v%-attn va%.npy: expected float16, float32 or float64 data, got int32$" },
  { name = "additive: --w-h and --u together", setup = additive_inputs(), argv = additive_run({ u = "u.npy" }),
    msg = "^%-%-w%-h: give %-%-w%-h or %-%-u, not both" },
  { name = "additive: neither --w-h nor --u", setup = additive_inputs(), argv = additive_run({ wh = false }),
    msg = "^%-%-w%-h: required, or %-%-u: the config 't_additive' has kind = \"additive\"" },
  { name = "additive: no --v-attn", setup = additive_inputs(), argv = additive_run({ va = false }),
    msg = "^%-%-v%-attn: required: the config 't_additive' has kind = \"additive\"$" },
  { name = "additive: --w, which only luong takes", setup = additive_inputs(), argv = additive_run({}, "--w", "ws.npy"),
    msg = "^%-%-w: the config 't_additive' %(kind = \"additive\"%) reads no such input %(it takes %-%-s, %-%-h, "
      .. "%-%-u, %-%-w%-s, %-%-w%-h, %-%-v%-attn%)$" },
  { name = "additive: --b without bias", setup = additive_inputs(), argv = additive_run({}, "--b", "va.npy"),
    msg = "^%-%-b: the config 't_additive' has no bias %(bias = true%), so %-%-b is not accepted$" },
  { name = "additive: --q", setup = additive_inputs(), argv = additive_run({}, "--q", "s.npy"),
    msg = "^%-%-q: the config 't_additive' has kind = \"additive\", which takes %-%-s and %-%-h; %-%-q is for sdpa "
      .. "and linear configs$" },
  { name = "additive: --lse", setup = additive_inputs(), argv = additive_run({}, "--lse", "l.npy"),
    msg = "^%-%-lse: the config 't_additive' has kind = \"additive\", which has no LSE$" },
  { name = "additive: --average-heads", setup = additive_inputs(),
    argv = additive_run({}, "--weights", "a.npy", "--average-heads"),
    msg = "^%-%-average%-heads: the config 't_additive' has kind = \"additive\": one head" },
  { name = "additive: --dropout-p", setup = additive_inputs(), argv = additive_run({}, "--dropout-p", "0.1"),
    msg = "^%-%-dropout%-p: the config 't_additive' has kind = \"additive\", which has no dropout" },
  { name = "additive: --seqlens-k without padding", setup = additive_inputs(),
    argv = additive_run({}, "--seqlens-k", "va.npy"), msg = "^va%.npy: the config 't_additive' has no padding" },
  { name = "additive: -o over --h", setup = additive_inputs(), argv = { "run", ADDITIVE, "--s", "s.npy", "--h",
    "h.npy", "--w-s", "ws.npy", "--u", "u.npy", "--v-attn", "va.npy", "-o", "./h.npy" },
    msg = "^%-o: '%./h%.npy' is the %-%-h input; not replacing an input$" },
  { name = "additive: --weights the same file as -o", setup = additive_inputs(),
    argv = additive_run({}, "--weights", "c.npy"), msg = "^%-%-weights: must differ from %-o$" },
  { name = "--s for an sdpa config", setup = inputs, argv = run({}, "--s", "q.npy"),
    msg = "^%-%-s: the config 't_everything' has kind = \"sdpa\", which takes %-%-q, %-%-k and %-%-v; %-%-s is for "
      .. "additive and luong configs$" },
  { name = "luong concat: W of the general score's shape", setup = concat_inputs({ 21, 10 }), argv = CONCAT_RUN,
    msg = "^%-%-w w%.npy: shape %[21, 10%] does not match %[attn_dim, key_dim %+ query_dim%] = %[15, 31%] of the "
      .. "config$" },
  { name = "luong concat: a mask of the wrong shape", setup = function(d)
      concat_inputs({ 15, 31 })(d)
      npy(d .. "/m.npy", "|b1", { LK, LQ })
    end, argv = CONCAT_RUN, msg = "^m%.npy: shape %(5, 3%) does not match" },
  { name = "luong concat: --w-s, which only additive takes", setup = concat_inputs({ 15, 31 }),
    argv = function()
      local argv = {}
      for _, a in ipairs(CONCAT_RUN) do argv[#argv + 1] = a end
      argv[#argv + 1] = "--w-s"
      argv[#argv + 1] = "w.npy"
      return argv
    end,
    msg = "^%-%-w%-s: the config 't_luong_concat' %(kind = \"luong\", score = \"concat\"%) reads no such input" },

  -- commands that do not apply to additive and luong configs
  { name = "tune an additive config", argv = { "tune", ADDITIVE },
    msg = "^tune: .*t_additive%.lua is additive attention, which has no tiles to tune" },
  { name = "plot mask of a luong config",
    argv = { "plot", "mask", CONCAT, "--seq-q", "4", "--seq-k", "4", "-o", "m.svg" },
    msg = "^plot mask: .*t_luong_concat%.lua is luong attention, which has no mask rule or tiles to draw" },
  { name = "bench --kv-layout for an additive config",
    argv = { "bench", ADDITIVE, "--kv-layout", "bhsd", "--no-blas", "--no-reference" },
    msg = "^bench: %-%-kv%-layout: the config 't_additive' has kind = \"additive\"" },
  { name = "bench --precomputed-u for a luong config",
    argv = { "bench", CONCAT, "--precomputed-u", "--no-blas", "--no-reference" },
    msg = "^bench: %-%-precomputed%-u: the config 't_luong_concat' has kind = \"luong\"; only additive kernels "
      .. "read U$" },
  { name = "bench --no-precomputed-u for an sdpa config",
    argv = { "bench", EVERYTHING, "--no-precomputed-u", "--no-blas", "--no-reference" },
    msg = "^bench: %-%-no%-precomputed%-u: the config 't_everything' has kind = \"sdpa\"" },

  -- appending (--k-new, --v-new, --k-out, --v-out): t_everything's cache of capacity LK = 5
  { name = "--k-new without --v-new", setup = append_inputs, argv = run({}, "--k-new", "kn.npy"),
    msg = "^%-%-v%-new: required with %-%-k%-new" },
  { name = "--v-new without --k-new", setup = append_inputs, argv = run({}, "--v-new", "vn.npy"),
    msg = "^%-%-v%-new: needs %-%-k%-new" },
  { name = "--k-out without --k-new", setup = append_inputs, argv = run({}, "--k-out", "k2.npy"),
    msg = "^%-%-k%-out: only with %-%-k%-new" },
  { name = "--k-new of the wrong kv heads", setup = function(d)
      append_inputs(d)
      npy(d .. "/kn.npy", "<f4", { B, 2, 3, D })
    end, argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy"),
    msg = "^kn%.npy: shape %(2, 2, 3, 72%) does not match the config: expected heads_kv 2" },
  { name = "--k-new of another batch", setup = function(d)
      append_inputs(d)
      npy(d .. "/kn.npy", "<f4", { 3, 2, HKV, D })
    end, argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy"),
    msg = "^kn%.npy: batch 3 does not match the queries' batch 2$" },
  { name = "--v-new with other new rows than --k-new", setup = function(d)
      append_inputs(d)
      npy(d .. "/vn.npy", "<f4", { B, 1, HKV, D })
    end, argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy"),
    msg = "^vn%.npy: seq_new 1 does not match kn%.npy's seq_new 2$" },
  { name = "--k-new past the cache's capacity", setup = function(d)
      append_inputs(d)
      npy(d .. "/s.npy", "<i4", { B }, i32(1, 4))
      helper.write_file(d .. "/k2.npy", "before")
    end, argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy", "--k-out", "k2.npy", "--v-out", "v2.npy"),
    msg = "^s%.npy: seqlens_k%[1%] = 4 and 2 new rows pass the cache's capacity of 5 keys$" },
  { name = "--k-out over --q", setup = append_inputs,
    argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy", "--k-out", "q.npy"),
    msg = "^%-%-k%-out: 'q%.npy' is the %-%-q input; not replacing an input$" },
  { name = "-o over --k-new", setup = append_inputs,
    argv = run({ no_output = true }, "--k-new", "kn.npy", "--v-new", "vn.npy", "-o", "kn.npy"),
    msg = "^%-o: 'kn%.npy' is the %-%-k%-new input; not replacing an input$" },
  { name = "--v-out over -o", setup = append_inputs,
    argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy", "--v-out", "o.npy"),
    msg = "^%-%-v%-out: must differ from %-o$" },
  { name = "--k-out over --v", setup = append_inputs,
    argv = run({}, "--k-new", "kn.npy", "--v-new", "vn.npy", "--k-out", "v.npy"),
    msg = "^%-%-k%-out: 'v%.npy' is the %-%-v input; not replacing an input$" },
  { name = "--k-new for a linear config", setup = function(d)
      linear_inputs(d)
      npy(d .. "/kn.npy", "<f4", { B, 1, 2, 16 })
    end,
    argv = { "run", LINEAR, "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--k-new", "kn.npy", "-o", "o.npy" },
    msg = "^%-%-k%-new: the config 't_linear_state' has kind = \"linear\": appending new keys is for sdpa "
      .. "configs$" },
  { name = "--v-new for a shared_kv config", setup = function(d)
      npy(d .. "/q.npy", "<f4", { 1, 2, 6, 40 })
      npy(d .. "/k.npy", "<f4", { 1, 6, 2, 40 })
      npy(d .. "/m.npy", "|b1", { 2, 6 })
      npy(d .. "/kn.npy", "<f4", { 1, 2, 2, 40 })
      npy(d .. "/vn.npy", "<f4", { 1, 2, 2, 24 })
    end, argv = { "run", helper.root .. "/configs/test/t_shared_kv.lua", "--q", "q.npy", "--k", "k.npy", "--mask",
      "m.npy", "--k-new", "kn.npy", "--v-new", "vn.npy", "-o", "o.npy" },
    msg = "^%-%-v%-new: the config 't_shared_kv' has shared_kv %(the new rows are K's alone%), so it is not "
      .. "accepted$" },

  -- options of the tools
  { name = "--threads 1.5", setup = inputs, argv = run({}, "--threads", "1.5"), msg = "^%-%-threads: .*'1%.5'" },
  { name = "--threads many", setup = inputs, argv = run({}, "--threads", "many"), msg = "'many'" },
  { name = "--threads -3", setup = inputs, argv = run({}, "--threads", "-3"), msg = "%-3" },
  { name = "--threads=-3", setup = inputs, argv = run({}, "--threads=-3"), msg = "%-%-threads" },
  { name = "unknown ISA (run)", setup = inputs, argv = run({}, "--isa", "sse9"), msg = "^%-%-isa: unknown ISA 'sse9'" },
  { name = "unknown ISA (check)", argv = { "check", EVERYTHING, "--quick", "--isa", "sse9" },
    msg = "^%-%-isa: unknown ISA 'sse9'" },
  { name = "bench --batch 0", argv = { "bench", EVERYTHING, "--batch", "0", "--no-blas", "--no-reference" },
    msg = "%-%-batch" },
  { name = "bench --seq-q 1.5", argv = { "bench", EVERYTHING, "--seq-q", "1.5", "--no-blas", "--no-reference" },
    msg = "%-%-seq%-q" },
  { name = "bench --kv-layout bhld",
    argv = { "bench", EVERYTHING, "--kv-layout", "bhld", "--no-blas", "--no-reference" }, msg = "%-%-kv%-layout" },
  { name = "bench --append 0", argv = { "bench", EVERYTHING, "--append", "0" },
    msg = "^%-%-append: expected an integer in 1%.%.16777216 %(new rows a sequence%), got '0'$" },
  { name = "bench --append past the cache", argv = { "bench", EVERYTHING, "--append", "9", "--seq-k", "8" },
    msg = "^bench: %-%-append 9: more new rows than the cache holds %(%-%-seq%-k 8%)$" },
  { name = "bench --append for an additive config", argv = { "bench", ADDITIVE, "--append", "4" },
    msg = "^bench: %-%-append: the config 't_additive' has kind = \"additive\"; appending is for sdpa configs$" },
}

describe("cli errors #slow", function()
  local tmp, cache

  setup(function()
    tmp = helper.tmpdir()
    cache = tmp .. "/cache"
  end)
  teardown(function()
    os.execute("chmod -R u+w " .. helper.quote(tmp) .. " 2>/dev/null")
    helper.rmtree(tmp)
  end)

  --- Every path under folder d (relative, sorted) with the contents of the
  -- regular files: the state a failed command must leave as it was.
  local function snapshot(d)
    local _, out = helper.sh("find . -print | LC_ALL=C sort", { cwd = d })
    local state = {}
    for _, p in ipairs(helper.lines(out)) do
      local f = io.open(d .. "/" .. p, "rb")
      local content = f and f:read("*a")
      if f then f:close() end
      -- reading a folder gives nil on Linux
      state[#state + 1] = p .. (type(content) == "string" and (" = " .. content) or "/")
    end
    return state
  end

  --- Names in the cache: complete entries hold every tool.
  local function cache_entries()
    local _, out = helper.sh("ls -A " .. helper.quote(cache) .. " 2>/dev/null")
    local set = {}
    for _, n in ipairs(helper.lines(out)) do set[n] = true end
    return set
  end

  local n = 0
  for _, case in ipairs(CASES) do
    it(case.name, function()
      n = n + 1
      local d = ("%s/case%d"):format(tmp, n)
      assert(require("pl.dir").makepath(d))
      local ctx = {}
      if case.setup then case.setup(d, ctx) end
      local argv = type(case.argv) == "function" and case.argv(ctx) or case.argv
      local env = { ATTNGEN_CACHE = cache }
      for k, v in pairs(case.env or {}) do env[k] = type(v) == "function" and v(d) or v end
      local before, entries_before = snapshot(d), cache_entries()

      local code, out, err = helper.attngen(argv, { env = env, cwd = d })

      local cmd = "attngen " .. table.concat(argv, " ")
      assert.equal(case.code or EXIT_USAGE, code, ("%s: exit code (stderr: %s)"):format(cmd, err))
      assert.equal("attngen: ", err:sub(1, 9), cmd .. ": stderr: " .. err)
      assert.equal(1, #helper.lines(err), cmd .. ": not exactly one line: " .. err)
      assert.equal("\n", err:sub(-1), cmd .. ": no newline at the end: " .. err)
      assert.equal("", out, cmd .. ": something on stdout")
      local msg = err:sub(10, -2)
      assert.truthy(msg:find(case.msg), ("%s: '%s' does not match '%s'"):format(cmd, msg, case.msg))

      assert.same(before, snapshot(d), cmd .. ": the folder changed")
      local entries = cache_entries()
      for name in pairs(entries) do
        if not entries_before[name] then
          assert.is_nil(name:find("^%."), cmd .. ": left " .. name .. " in the cache")
          assert.is_nil(name:find("%.lock$"), cmd .. ": left the build lock " .. name)
          if name:find("^runtime%-") then -- the objects every config's tools share
            assert.is_true(helper.exists(cache .. "/" .. name .. "/complete"),
              ("%s: shared runtime entry %s incomplete"):format(cmd, name))
          else
            for _, tool in ipairs({ "run", "check", "bench" }) do
              assert.is_true(helper.exists(cache .. "/" .. name .. "/attn_" .. tool),
                ("%s: cache entry %s without attn_%s"):format(cmd, name, tool))
            end
          end
        end
      end
      local _, tmps = helper.sh("find . -name '*.tmp.*' -o -name '.build-*'", { cwd = tmp })
      assert.equal("", tmps, cmd .. ": temporary files left")
      if case.after then case.after(d, entries_before, entries) end
    end)
  end
end)
