-- Linear attention with a running state: causal, so that calling it one
-- token at a time matches one call over the whole sequence.
return {
  name = "t_linear_state",
  kind = "linear",
  heads_q = 2,
  head_dim = 16,
  causal = true,
  state = true,
  tile = { q = 16, kv = 16 },
}
