-- attngen plot: the .npy reader (every interpreter), then pictures drawn by
-- gnuplot (#slow: they compile the mask tool and run gnuplot, once, under
-- LuaJIT).  Pixels are read back by gnuplot itself (a PNG read as an image
-- and written as a table), at the centres of cells the layout of
-- generator/plots.lua places.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local npy = require("npy")
local plots = require("plots")

--- Little-endian float32 bytes of a finite number >= 0 (exact for the values used here).
local function f32(x)
  if x == 0 then return "\0\0\0\0" end
  local m, e = x, 0
  while m >= 2 do m = m / 2; e = e + 1 end
  while m < 1 do m = m * 2; e = e - 1 end
  local bits = (e + 127) * 8388608 + math.floor((m - 1) * 8388608 + 0.5)
  local t = {}
  for k = 1, 4 do t[k] = string.char(bits % 256); bits = math.floor(bits / 256) end
  return table.concat(t)
end

--- A .npy file: shape, values (f32) or raw data, descr and fortran order.
local function write_npy(p, shape, values, descr, fortran, raw)
  local dims = {}
  for i, n in ipairs(shape) do dims[i] = tostring(n) end
  local h = ("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }"):format(descr or "<f4",
    fortran and "True" or "False", table.concat(dims, ", ") .. (#dims == 1 and "," or ""))
  h = h .. (" "):rep((64 - (10 + #h + 1) % 64) % 64) .. "\n"
  local d = {}
  for i, v in ipairs(values or {}) do d[i] = f32(v) end
  return helper.write_file(p, "\147NUMPY\1\0" .. string.char(#h % 256, math.floor(#h / 256)) .. h
    .. (raw or table.concat(d)))
end

describe("npy reader", function()
  local tmp
  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  it("decodes float32 values", function()
    assert.equal(1, npy.f32(f32(1), 1))
    assert.equal(0.75, npy.f32(f32(0.75), 1))
    assert.equal(3.5, npy.f32(f32(3.5), 1))
    assert.equal(-2, npy.f32("\0\0\0\192", 1))
    assert.equal(math.huge, npy.f32("\0\0\128\127", 1))
    local nan = npy.f32("\0\0\192\127", 1)
    assert.is_true(nan ~= nan)
    assert.equal(2 ^ -149, npy.f32("\1\0\0\0", 1))
  end)

  it("reads shape and data, C order", function()
    local p = write_npy(tmp .. "/a.npy", { 2, 3 }, { 0, 1, 2, 3, 4, 5 })
    local a = assert(npy.read_f32(p))
    assert.same({ 2, 3 }, a.shape)
    assert.equal(6, a.count)
    assert.equal(4, npy.at(a, 4))
    assert.equal("(2, 3)", npy.shape_text(a.shape))
  end)

  it("refuses other dtypes, Fortran order, short data and non-.npy files", function()
    local _, err = npy.read_f32(write_npy(tmp .. "/d.npy", { 2 }, nil, "<f8", false, ("\0"):rep(16)))
    assert.truthy(err:find("holds dtype '<f8'; only little%-endian float32 %('<f4'%) is read"))
    _, err = npy.read_f32(write_npy(tmp .. "/f.npy", { 2, 2 }, { 1, 2, 3, 4 }, "<f4", true))
    assert.truthy(err:find("Fortran order"))
    _, err = npy.read_f32(write_npy(tmp .. "/s.npy", { 2, 2 }, { 1, 2, 3 }))
    assert.truthy(err:find("shape %(2, 2%) needs 16 bytes of data, the file holds 12"))
    _, err = npy.read_f32(helper.write_file(tmp .. "/t.npy", "hello, world"))
    assert.truthy(err:find("not a .npy file"))
  end)
end)

describe("plot #slow", function()
  local tmp, env
  setup(function()
    tmp = helper.tmpdir()
    env = helper.build_env(tmp)
    env.ATTNGEN_TUNE_DB = "none"
  end)
  teardown(function() helper.rmtree(tmp) end)

  --- Runs attngen in folder d; asserts success and "wrote".
  local function ok_run(d, args)
    local code, out, err = helper.attngen(args, { env = env, cwd = d })
    assert.equal(0, code, err)
    assert.truthy(out:find("^wrote "), out)
  end

  --- The size of a PNG (from its IHDR chunk).
  local function png_size(p)
    local s = assert(helper.read_file(p))
    assert.equal("\137PNG\r\n\26\n", s:sub(1, 8))
    local function u32(pos)
      local a, b, c, d = s:byte(pos, pos + 3)
      return ((a * 256 + b) * 256 + c) * 256 + d
    end
    return u32(17), u32(21)
  end

  --- The colours of pixels (x, y from the top-left) of a PNG, read by gnuplot: "#rrggbb" per probe.
  local function pixels(p, height, probes)
    local tab = p .. ".px"
    local gp = helper.write_file(p .. ".gp", ("set table %s\nplot %s binary filetype=png with rgbalpha\nunset table\n")
      :format(require("gnuplot").quote(tab), require("gnuplot").quote(p)))
    local code, _, err = helper.sh("gnuplot " .. helper.quote(gp))
    assert.equal(0, code, err)
    local want = {}
    for k, pr in ipairs(probes) do want[pr[1] .. " " .. (height - 1 - pr[2])] = k end
    local got = {}
    for x, y, r, g, b in assert(helper.read_file(tab)):gmatch("(%d+)%s+(%d+)%s+(%d+)%s+(%d+)%s+(%d+)[^\n]*\n") do
      local k = want[x .. " " .. y]
      if k then got[k] = ("#%02x%02x%02x"):format(tonumber(r), tonumber(g), tonumber(b)) end
    end
    os.remove(tab)
    os.remove(gp)
    return got
  end

  local function hex(c) return ("#%02x%02x%02x"):format(c[1], c[2], c[3]) end
  local C = plots.MASK_COLORS

  --- Runs the command args twice in d: -o STEM.png and -o STEM.svg.
  local function png_and_svg(d, args, stem)
    for _, ext in ipairs({ ".png", ".svg" }) do
      local argv = {}
      for i, a in ipairs(args) do argv[i] = a end
      argv[#argv + 1] = "-o"
      argv[#argv + 1] = stem .. ext
      ok_run(d, argv)
    end
  end

  it("mask: causal at 8 x 8, a PNG of the size asked, hidden above the diagonal", function()
    local d = tmp .. "/causal"
    assert(require("pl.dir").makepath(d))
    ok_run(d, { "plot", "mask", "llama3_8b", "--seq-q", "8", "--seq-k", "8", "-o", "m.png", "--size", "700x500" })
    assert.same({ 700, 500 }, { png_size(d .. "/m.png") })
    local area = plots.mask_area(700, 500)
    local px = pixels(d .. "/m.png", 500, {
      { plots.cell_pixel(area, 8, 8, 0, 7) }, { plots.cell_pixel(area, 8, 8, 7, 0) },
      { plots.cell_pixel(area, 8, 8, 3, 3) }, { plots.cell_pixel(area, 8, 8, 3, 4) },
    })
    assert.same({ hex(C.hidden), hex(C.visible), hex(C.visible), hex(C.hidden) }, px)
    assert.same({ "m.png" }, helper.ls(d)) -- no temporary file left
  end)

  it("mask: padding past seqlens_k in its own colour; an SVG names lengths and tiles", function()
    local d = tmp .. "/pad"
    assert(require("pl.dir").makepath(d))
    local args = { "plot", "mask", "llama3_8b", "--set", "padding=true", "--set", "causal=false", "--set",
      "tile={q=4,kv=16}", "--seq-q", "8", "--seq-k", "8", "--seqlens", "5", "--size", "700x500" }
    png_and_svg(d, args, "p")
    local area = plots.mask_area(700, 500)
    local px = pixels(d .. "/p.png", 500, { { plots.cell_pixel(area, 8, 8, 2, 2) },
      { plots.cell_pixel(area, 8, 8, 2, 6) }, { plots.cell_pixel(area, 8, 8, 7, 4) } })
    assert.same({ hex(C.visible), hex(C.padding), hex(C.visible) }, px)
    local text = assert(helper.read_file(d .. "/p.svg"))
    assert.truthy(text:find('width="700" height="500"', 1, true))
    assert.truthy(text:find("Lq = 8, Lk = 8, seqlens_k = 5", 1, true))
    assert.truthy(text:find("prefill tiles 4 x 16", 1, true))
    assert.truthy(text:find("partial tile (masked per key): 2", 1, true))
  end)

  it("mask: a sparse pattern's gathered keys in their own colour, and not on the tiles", function()
    -- fixed, block 32 with 8 summary keys, 16 x 16 tiles at 64 x 64: the rows of block 1 see the
    -- summary keys 24..31 on a gathered panel, so the tiles holding only those are skipped
    local d = tmp .. "/sparse"
    assert(require("pl.dir").makepath(d))
    local args = { "plot", "mask", "llama3_8b", "--set", 'sparse={pattern="fixed",block=32,summary=8}',
      "--set", "tile={q=16,kv=16}", "--seq-q", "64", "--seq-k", "64", "--size", "700x500" }
    png_and_svg(d, args, "s")
    local area = plots.mask_area(700, 500)
    local px = pixels(d .. "/s.png", 500, { { plots.cell_pixel(area, 64, 64, 40, 28) },
      { plots.cell_pixel(area, 64, 64, 40, 20) }, { plots.cell_pixel(area, 64, 64, 20, 4) } })
    assert.same({ hex(C.gathered), hex(C.hidden), hex(C.visible) }, px)
    local text = assert(helper.read_file(d .. "/s.svg"))
    assert.truthy(text:find("visible, on a gathered panel (sparse)", 1, true))
    assert.truthy(text:find("skipped tile (no visible key): 10", 1, true))
    assert.truthy(text:find("full tile (no mask test): 2", 1, true))
    assert.truthy(text:find("partial tile (masked per key): 4", 1, true))
  end)

  it("mask: a run-time mask is named as not drawn", function()
    local d = tmp .. "/bool"
    assert(require("pl.dir").makepath(d))
    ok_run(d, { "plot", "mask", "gpt2", "--set", 'mask="bool"', "--seq-q", "4", "--seq-k", "6", "-o", "b.svg" })
    assert.truthy(helper.read_file(d .. "/b.svg"):find("the run-time bool mask is data, not drawn", 1, true))
  end)

  it("weights: the max cell in the palette's top colour, labels, and a strip for one query row", function()
    local d = tmp .. "/weights"
    assert(require("pl.dir").makepath(d))
    local v = {}
    for k = 1, 2 * 4 * 6 do v[k] = (k % 5) / 10 end
    v[4 * 6 + 2 * 6 + 5 + 1] = 0.875 -- head 1, row 2, key 5: the max
    write_npy(d .. "/w.npy", { 1, 2, 4, 6 }, v)
    helper.write_file(d .. "/tok.txt", "a\nb\nc\nd\ne\nf\n")
    ok_run(d, { "plot", "weights", "w.npy", "--head", "1", "--labels", "tok.txt", "-o", "w.png", "--size", "600x500" })
    assert.same({ 600, 500 }, { png_size(d .. "/w.png") })
    local area = plots.weights_area(600, 500, { "a" }, { "a" })
    local px = pixels(d .. "/w.png", 500, { { plots.cell_pixel(area, 4, 6, 2, 5) } })
    assert.equal(plots.PALETTE[#plots.PALETTE], px[1])
    ok_run(d, { "plot", "weights", "w.npy", "--average-heads", "-o", "avg.svg" })
    assert.truthy(helper.read_file(d .. "/avg.svg"):find("mean of 2 heads", 1, true))
    write_npy(d .. "/one.npy", { 1, 6 * 0 + 1, 6 }, { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 })
    ok_run(d, { "plot", "weights", "one.npy", "--labels", "tok.txt", "-o", "strip.png" })
    assert.same({ 1000, 300 }, { png_size(d .. "/strip.png") })
  end)

  it("entropy: a layers x heads heatmap of the means, and one head's rows as a line", function()
    local d = tmp .. "/entropy"
    assert(require("pl.dir").makepath(d))
    -- two layers [B=2][H=3][Lq=2]: layer 0 head h has mean h + 0.5, layer 1 head h mean 2h + 0.25
    local l0, l1 = {}, {}
    for b = 0, 1 do
      for h = 0, 2 do
        for i = 0, 1 do
          l0[#l0 + 1] = h + (i == 0 and 0.25 or 0.75)
          l1[#l1 + 1] = 2 * h + (b == 0 and 0 or 0.5)
        end
      end
    end
    write_npy(d .. "/e0.npy", { 2, 3, 2 }, l0)
    write_npy(d .. "/e1.npy", { 2, 3, 2 }, l1)
    ok_run(d, { "plot", "entropy", "e0.npy", "e1.npy", "-o", "h.svg" })
    local svg = helper.read_file(d .. "/h.svg")
    for _, cell in ipairs({ "0.50", "1.50", "2.50", "0.25", "2.25", "4.25", "0: e0.npy", "1: e1.npy" }) do
      assert.truthy(svg:find(cell, 1, true), cell)
    end
    ok_run(d, { "plot", "entropy", "e1.npy", "--head", "2", "--batch", "1", "-o", "rows.png", "--size", "640x400" })
    assert.same({ 640, 400 }, { png_size(d .. "/rows.png") })
  end)

  -- errors: exit 2, one line, nothing on stdout, no file left behind
  local function fails(name, setup_fn, args, pattern, extra_env)
    it("error: " .. name, function()
      local d = tmp .. "/err-" .. name:gsub("%W", "_")
      assert(require("pl.dir").makepath(d))
      if setup_fn then setup_fn(d) end
      local before = helper.ls(d)
      local e = {}
      for k, val in pairs(env) do e[k] = val end
      for k, val in pairs(extra_env and extra_env(d) or {}) do e[k] = val end
      local code, out, err = helper.attngen(args, { env = e, cwd = d })
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.equal(1, #helper.lines(err), err)
      assert.truthy(err:sub(10, -2):find(pattern), err)
      assert.same(before, helper.ls(d))
    end)
  end
  local function weights_file(d)
    local v = {}
    for k = 1, 2 * 3 * 4 do v[k] = 0.25 end
    write_npy(d .. "/w.npy", { 1, 2, 3, 4 }, v)
    helper.write_file(d .. "/tok.txt", "a\nb\nc\n")
  end
  fails("bad -o extension", nil, { "plot", "mask", "gpt2", "--seq-q", "4", "--seq-k", "4", "-o", "m.jpg" },
    "^%-o m%.jpg: the picture must be a %.svg or %.png file$")
  fails("missing --seq-k", nil, { "plot", "mask", "gpt2", "--seq-q", "4", "-o", "m.svg" }, "%-%-seq%-k")
  fails("--seq-q not a number", nil, { "plot", "mask", "gpt2", "--seq-q", "x", "--seq-k", "4", "-o", "m.svg" },
    "^%-%-seq%-q x: must be an integer in 1%.%.1048576$")
  fails("--seqlens without padding", nil, { "plot", "mask", "gpt2", "--seq-q", "4", "--seq-k", "4", "--seqlens", "2",
    "-o", "m.svg" }, "^%-%-seqlens: gpt2 has no padding %(add %-%-set padding=true%)$")
  fails("unknown head", weights_file, { "plot", "weights", "w.npy", "--head", "5", "-o", "w.svg" },
    "^%-%-head 5: w%.npy has shape %(1, 2, 3, 4%), heads 0%.%.1$")
  fails("no head among several", weights_file, { "plot", "weights", "w.npy", "-o", "w.svg" },
    "give %-%-head H %(0%.%.1%) or %-%-average%-heads$")
  fails("labels of the wrong count", weights_file, { "plot", "weights", "w.npy", "--head", "0", "--labels",
    "tok.txt", "-o", "w.svg" },
    "^%-%-labels tok%.txt: 3 labels, but the weights have Lk = 4 keys %(shape %(1, 2, 3, 4%)%)$")
  fails("--batch out of range", weights_file, { "plot", "weights", "w.npy", "--head", "0", "--batch", "1",
    "-o", "w.svg" }, "^%-%-batch 1: w%.npy has shape %(1, 2, 3, 4%), batch entries 0%.%.0$")
  fails("not float32", function(d) write_npy(d .. "/w.npy", { 2 }, nil, "<i4", false, ("\0"):rep(8)) end,
    { "plot", "weights", "w.npy", "-o", "w.svg" }, "^w%.npy: holds dtype '<i4'")
  local function entropy_files(d)
    write_npy(d .. "/e0.npy", { 1, 2, 3 }, { 0, 1, 2, 3, 4, 5 })
    write_npy(d .. "/e1.npy", { 1, 3, 2 }, { 0, 1, 2, 3, 4, 5 })
  end
  fails("entropy of the wrong rank", weights_file, { "plot", "entropy", "w.npy", "-o", "e.svg" },
    "^w%.npy: shape %(1, 2, 3, 4%); the entropy must be %[B%]%[Hq%]%[Lq%]")
  fails("entropy files of different heads", entropy_files, { "plot", "entropy", "e0.npy", "e1.npy", "-o", "e.svg" },
    "^e1%.npy: shape %(1, 3, 2%) has 3 heads, e0%.npy has 2$")
  fails("entropy --head with several files", entropy_files, { "plot", "entropy", "e0.npy", "e0.npy", "--head",
    "0", "-o", "e.svg" }, "^%-%-head 0: draws one file's rows; 2 files given$")
  fails("entropy --head out of range", entropy_files, { "plot", "entropy", "e0.npy", "--head", "2", "-o", "e.svg" },
    "^%-%-head 2: e0%.npy has 2 heads, 0%.%.1$")
  fails("entropy --batch out of range", entropy_files, { "plot", "entropy", "e0.npy", "--head", "0", "--batch",
    "1", "-o", "e.svg" }, "^%-%-batch 1: e0%.npy has batch entries 0%.%.0$")
  fails("gnuplot missing", weights_file, { "plot", "weights", "w.npy", "--head", "0", "-o", "w.svg" },
    "^gnuplot not found on PATH %(install the Debian package gnuplot%-nox", function(d)
      -- a PATH with the interpreter and what the shim needs, and no gnuplot
      local bin = d .. "/../nognuplot-bin"
      assert(require("pl.dir").makepath(bin))
      for _, tool in ipairs({ "luajit", "dirname" }) do
        local _, where = helper.sh("command -v " .. tool)
        os.execute(("ln -sf %s %s/%s"):format(helper.quote((where:gsub("%s+$", ""))), helper.quote(bin), tool))
      end
      return { PATH = bin, ATTNGEN_LUA = "luajit" }
    end)
end)
