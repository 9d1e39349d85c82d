-- The documentation's relative links: every link of README.md and docs/ names
-- a file of the tree, and every #anchor a heading of its page (GitHub's rule:
-- lower case, punctuation dropped, spaces as hyphens, -1, -2 ... for repeats).
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local path = require("pl.path")
local dir = require("pl.dir")

--- GitHub's anchor of a heading's text.
local function slug(heading)
  return (heading:lower():gsub("[^%w%-_ ]", ""):gsub(" ", "-"))
end

--- The markdown files: README.md and every .md under docs/, relative to the root.
local function pages()
  local list = { "README.md" }
  for _, f in ipairs(dir.getallfiles(helper.root .. "/docs", "*.md")) do
    list[#list + 1] = f:sub(#helper.root + 2)
  end
  table.sort(list)
  return list
end

--- Calls fn(line_number, line) for each line of a page outside fenced code.
local function each_prose_line(text, fn)
  local fenced, n = false, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match("^```") then
      fenced = not fenced
    elseif not fenced then
      fn(n, line)
    end
  end
end

local anchors_of = {}
--- The set of anchors of a page (relative to the root).
local function anchors(page)
  if anchors_of[page] then return anchors_of[page] end
  local set, seen = {}, {}
  each_prose_line(assert(helper.read_file(helper.root .. "/" .. page)), function(_, line)
    local heading = line:match("^#+ (.*)$")
    if heading then
      local s = slug(heading)
      local k = seen[s] or 0
      seen[s] = k + 1
      set[k == 0 and s or (s .. "-" .. k)] = true
    end
  end)
  anchors_of[page] = set
  return set
end

--- "docs/log/../kernels.md" -> "docs/kernels.md".
local function normalize(p)
  local parts = {}
  for part in p:gmatch("[^/]+") do
    if part == ".." and #parts > 0 then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return table.concat(parts, "/")
end

--- Every relative link of every page: { page, line, target file or nil, anchor or nil, text }.
local function links()
  local list = {}
  for _, page in ipairs(pages()) do
    local base = page:match("^(.*)/[^/]*$")
    each_prose_line(assert(helper.read_file(helper.root .. "/" .. page)), function(n, line)
      for url in line:gmatch("%[[^%]]*%]%(([^%)%s]+)%)") do
        if not url:match("^%a[%w+.-]*:") then
          local file, anchor = url:match("^([^#]*)#?(.*)$")
          local target = file == "" and page or normalize((base and base .. "/" or "") .. file)
          list[#list + 1] = { page = page, line = n, target = target, anchor = anchor ~= "" and anchor or nil,
            url = url }
        end
      end
    end)
  end
  return list
end

describe("the documentation's links", function()
  it("computes GitHub's anchors", function()
    assert.equal("lq--1-on-the-blocked-kernel-zen-4", slug("Lq = 1 on the blocked kernel (Zen 4)"))
    assert.equal("attention-weights-weights--true", slug("Attention weights (`weights = true`)"))
    assert.equal("pv-a-block-at-a-time", slug("P*V a block at a time"))
    local set = anchors("docs/decode.md")
    assert.truthy(set["the-streaming-kernel"])
    assert.falsy(set["no-such-heading"])
  end)

  it("finds the links of every page", function()
    local per_page = {}
    for _, l in ipairs(links()) do per_page[l.page] = (per_page[l.page] or 0) + 1 end
    assert.truthy((per_page["README.md"] or 0) > 10)
    assert.truthy((per_page["docs/decode.md"] or 0) > 5)
  end)

  it("name files that exist", function()
    local bad = {}
    for _, l in ipairs(links()) do
      if not path.exists(helper.root .. "/" .. l.target) then
        bad[#bad + 1] = ("%s:%d: %s"):format(l.page, l.line, l.url)
      end
    end
    assert.same({}, bad)
  end)

  it("name headings that exist", function()
    local bad = {}
    for _, l in ipairs(links()) do
      if l.anchor and l.target:match("%.md$") and path.exists(helper.root .. "/" .. l.target)
          and not anchors(l.target)[l.anchor] then
        bad[#bad + 1] = ("%s:%d: %s"):format(l.page, l.line, l.url)
      end
    end
    assert.same({}, bad)
  end)
end)
