--- Four floats in registers (the "q4" interface of isa/init.lua) spelled
-- with SSE/AVX: the rows of one kv head in the streaming decode path.  The
-- x86 ISA modules share it and pass what differs with their vector width:
-- spread(v), lane(s, r) and hsum4(a, b, c, d).  fma needs the target's FMA.
return function(spread, lane, hsum4q)
  return {
    vec = "__m128",
    zero = function() return "_mm_setzero_ps()" end,
    set1 = function(x) return ("_mm_set1_ps(%s)"):format(x) end,
    set4 = function(a, b, c, d) return ("_mm_set_ps(%s, %s, %s, %s)"):format(d, c, b, a) end,
    load = function(p) return ("_mm_loadu_ps(%s)"):format(p) end,
    store = function(p, v) return ("_mm_storeu_ps(%s, %s)"):format(p, v) end,
    add = function(a, b) return ("_mm_add_ps(%s, %s)"):format(a, b) end,
    sub = function(a, b) return ("_mm_sub_ps(%s, %s)"):format(a, b) end,
    mul = function(a, b) return ("_mm_mul_ps(%s, %s)"):format(a, b) end,
    div = function(a, b) return ("_mm_div_ps(%s, %s)"):format(a, b) end,
    fma = function(a, b, c) return ("_mm_fmadd_ps(%s, %s, %s)"):format(a, b, c) end,
    max = function(a, b) return ("_mm_max_ps(%s, %s)"):format(a, b) end,
    min = function(a, b) return ("_mm_min_ps(%s, %s)"):format(a, b) end,
    select_lt = function(a, b, x, y)
      return ("_mm_blendv_ps(%s, %s, _mm_cmp_ps(%s, %s, _CMP_LT_OQ))"):format(y, x, a, b)
    end,
    round = function(v) return ("_mm_round_ps(%s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"):format(v) end,
    pow2i = function(v)
      return ("_mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(%s), _mm_set1_epi32(127)), 23))"):format(v)
    end,
    -- nonzero when some lane of a is greater than b (ordered: NaN never is)
    any_gt = function(a, b) return ("_mm_movemask_ps(_mm_cmp_ps(%s, %s, _CMP_GT_OQ))"):format(a, b) end,
    hsum4 = hsum4q, -- the sums of four full vectors, as one q4
    spread = spread, -- a q4 copied to every 128-bit lane of a full vector
    lane = lane,     -- lane r of every 128-bit lane of a spread q4, as a full vector
  }
end
