-- Luong, Pham and Manning (2015), "Effective Approaches to Attention-based
-- Neural Machine Translation": 1000-unit LSTMs, the "general" score
-- e_ij = h_j . (W s_i) of their best global-attention model.  Sentences of
-- a batch differ in length: padding.
return {
  name = "luong_general",
  kind = "luong",
  score = "general",
  query_dim = 1000,
  key_dim = 1000,
  padding = true,
}
