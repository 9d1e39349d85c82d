-- Linear attention, not causal: GQA, odd head dims (vector tails), padding.
return {
  name = "t_linear",
  kind = "linear",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 59,
  head_dim_v = 40,
  padding = true,
}
