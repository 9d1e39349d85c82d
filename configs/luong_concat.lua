-- Luong, Pham and Manning (2015): the "concat" score
-- e_ij = v . tanh(W [h_j; s_i]) over 1000-unit LSTM states, with an
-- attention layer of 1000 units and no bias, as the paper writes it.
return {
  name = "luong_concat",
  kind = "luong",
  score = "concat",
  query_dim = 1000,
  key_dim = 1000,
  attn_dim = 1000,
  bias = false,
  padding = true,
}
