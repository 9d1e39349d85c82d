-- Additive attention with a wide attention layer (Da 1000, as in Bahdanau
-- et al. 2015): the score is a sum of 1000 v_a tanh(...) terms.
return {
  name = "t_additive_wide",
  kind = "additive",
  query_dim = 20,
  key_dim = 24,
  attn_dim = 1000,
  bias = true,
  padding = true,
}
