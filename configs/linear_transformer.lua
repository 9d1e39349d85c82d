-- A layer of the linear transformer of Katharopoulos et al. (2020),
-- "Transformers are RNNs: Fast Autoregressive Transformers with Linear
-- Attention": 8 heads of 64, causal (autoregressive), phi(x) = elu(x) + 1,
-- with the recurrent state so that generation runs one token at a time.
return {
  name = "linear_transformer",
  kind = "linear",
  heads_q = 8,
  head_dim = 64,
  causal = true,
  state = true,
}
