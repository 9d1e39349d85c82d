--- What every vector ISA shares for the 16-bit storage types (isa/init.lua,
-- "Storage types"): an ISA module spells a full-vector load (widen) and
-- store (narrow) of bf16 and f16; this module builds the rest from them.
--   storage(isa, set1, spell): the module's `storage` table, from
--     spell[dt] = { load = function(p), store = function(p, v) } (C text);
--     tails go through the helpers below, broadcasts through the file's
--     scalar widening (templates/lib/convert.c.tmpl)
--   tails(isa, vec, lanes, dt, spell): C text of the tail helpers: the
--     first n lanes loaded from, or stored as, dt through a buffer of one
--     vector's lanes
local M = {}

function M.storage(isa, set1, spell)
  local t = {}
  for dt, s in pairs(spell) do
    t[dt] = {
      load_from = s.load,
      loadn_from = function(p, n) return ("attn_loadn_%s__%s(%s, %d)"):format(dt, isa, p, n) end,
      set1_from = function(x) return set1(("attn_widen_%s__scalar(%s)"):format(dt, x)) end,
      store_to = s.store,
      storen_to = function(p, v, n) return ("attn_storen_%s__%s(%s, %s, %d)"):format(dt, isa, p, v, n) end,
    }
  end
  return t
end

function M.tails(isa, vec, lanes, dt, spell)
  return ([[

/* The first n (< LANES) DT values at p as f32 lanes, the rest 0. */
ATTR static inline VEC attn_loadn_DT__ISA(const uint16_t *p, int n)
{
    uint16_t t[LANES] = {0};
    memcpy(t, p, sizeof(uint16_t) * (size_t)n);
    return WIDEN;
}

/* The first n (< LANES) lanes of v stored at p as DT. */
ATTR static inline void attn_storen_DT__ISA(uint16_t *p, VEC v, int n)
{
    uint16_t t[LANES];
    STORE;
    memcpy(p, t, sizeof(uint16_t) * (size_t)n);
}]]):gsub("%u%u+", { LANES = tostring(lanes), DT = dt, ISA = isa, VEC = vec,
    WIDEN = spell[dt].load("t"), STORE = spell[dt].store("t", "v") })
end

return M
