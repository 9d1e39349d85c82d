-- Linear attention, every tensor bf16, with a state, causal with top-left
-- positions, Dv apart from D.
return {
  name = "t_linear_bf16",
  kind = "linear",
  heads_q = 3,
  head_dim = 33,
  head_dim_v = 20,
  causal = "top_left",
  state = true,
  padding = true,
  dtype = "bf16",
  eps = 1e-5,
}
