--- Running gnuplot: every picture attngen makes (plot, tune --plot, the
-- bench suite's plot) is drawn by gnuplot from a script and data files that
-- the Lua side writes.  The picture is written to a temporary file in its
-- own folder and renamed into place, so a failed run leaves no half-written
-- picture.
local path = require("pl.path")
local dir = require("pl.dir")
local util = require("util")

local M = {}

--- The picture formats, by the output's extension: gnuplot's terminal.
M.FORMATS = {
  svg = "svg size %d,%d fixed noenhanced font 'sans,12' background '#ffffff'",
  png = "pngcairo size %d,%d noenhanced font 'sans,10' background '#ffffff'",
}

M.MISSING = "gnuplot not found on PATH (install the Debian package gnuplot-nox, or run 'make bootstrap')"

--- A gnuplot string literal (single quotes: no escapes but '' for ').
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "''") .. "'"
end

--- The format of an output path ("svg" or "png"), or nil, err.
function M.format(p)
  local ext = tostring(p):match("%.([%w]+)$")
  ext = ext and ext:lower()
  if not ext or not M.FORMATS[ext] then
    return nil, ("-o %s: the picture must be a .svg or .png file"):format(p)
  end
  return ext
end

--- Whether gnuplot can be run: true, or nil and a one-line error.
function M.available()
  local ok = util.run_capture("command -v gnuplot")
  if not ok then return nil, M.MISSING end
  return true
end

--- Checks before any work that `p` can be written as a picture: its format,
-- gnuplot, its folder.  Returns the format, or nil and a one-line error.
function M.check_output(p)
  local fmt, err = M.format(p)
  if not fmt then return nil, err end
  local ok, gerr = M.available()
  if not ok then return nil, gerr end
  if path.isdir(p) then return nil, ("%s: is a folder"):format(p) end
  local folder = path.dirname(p)
  if folder == "" then folder = "." end
  if not path.isdir(folder) then return nil, ("%s: cannot write: no folder '%s'"):format(p, folder) end
  local probe = p .. ".tmp." .. util.unique_suffix()
  local f, ferr = io.open(probe, "wb")
  if not f then return nil, ("%s: cannot write: %s"):format(p, tostring(ferr)) end
  f:close()
  os.remove(probe)
  return fmt
end

--- The last non-empty line of gnuplot's output (its error), for a one-line message.
local function last_line(out)
  local last
  for line in (tostring(out or "") .. "\n"):gmatch("([^\n]*)\n") do
    line = line:gsub("^%s+", ""):gsub("%s+$", "")
    if line ~= "" and not line:match("^%^$") then last = line end
  end
  return last or "no output"
end

--- Draws a picture.  job: { width, height, script = text (gnuplot commands
-- after the terminal and output are set; data files are named by
-- DATA(name)), data = { name = bytes } }.  Writes `out` (svg or png by its
-- extension) through a temporary file in its folder.  Returns true, or nil
-- and a one-line error.
function M.render(out, job)
  local fmt, err = M.format(out)
  if not fmt then return nil, err end
  local ok, gerr = M.available()
  if not ok then return nil, gerr end
  local work = os.tmpname()
  os.remove(work)
  work = work .. ".attngen-plot"
  local made, merr = util.makepath(work)
  if not made then return nil, merr end
  local tmp = out .. ".tmp." .. util.unique_suffix()
  local function fail(msg)
    os.remove(tmp)
    dir.rmtree(work)
    return nil, msg
  end
  local names = {}
  for name, bytes in pairs(job.data or {}) do
    local file = work .. "/" .. name
    local w, werr = util.write_atomic(file, bytes)
    if w == nil then return fail(("cannot write gnuplot's data: %s"):format(tostring(werr))) end
    names[name] = file
  end
  local script = job.script:gsub("DATA%(([%w_%.]+)%)", function(name)
    return M.quote(assert(names[name], "no data file " .. name))
  end)
  local text = table.concat({
    "set terminal " .. M.FORMATS[fmt]:format(job.width, job.height),
    "set output " .. M.quote(tmp),
    script,
    "unset output", "",
  }, "\n")
  local w, werr = util.write_atomic(work .. "/plot.gp", text)
  if w == nil then return fail(("cannot write gnuplot's script: %s"):format(tostring(werr))) end
  local ran, outtext, rc = util.run_capture("gnuplot " .. util.shell_quote(work .. "/plot.gp"))
  if not ran then
    return fail(("gnuplot failed (exit code %s) drawing %s: %s"):format(tostring(rc), out, last_line(outtext)))
  end
  local size = path.getsize(tmp)
  if not size or size == 0 then return fail(("gnuplot wrote nothing to %s"):format(out)) end
  local renamed, rerr = os.rename(tmp, out)
  if not renamed then return fail(("%s: cannot write: %s"):format(out, tostring(rerr))) end
  dir.rmtree(work)
  return true
end

--- Pixel fractions of a plot area: `set lmargin at screen ...` for a box
-- given in pixels from the picture's top-left corner.
function M.margins(width, height, box)
  return table.concat({
    ("set lmargin at screen %.6f"):format(box.x0 / width),
    ("set rmargin at screen %.6f"):format(box.x1 / width),
    ("set tmargin at screen %.6f"):format(1 - box.y0 / height),
    ("set bmargin at screen %.6f"):format(1 - box.y1 / height),
  }, "\n")
end

return M
