-- Linear attention from an f16 cache (Q and O f32), causal, D 72.
return {
  name = "t_linear_f16",
  kind = "linear",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 72,
  causal = true,
  dtype = { q = "f32", kv = "f16", o = "f32" },
}
