-- The attention of RNNsearch (Bahdanau, Cho and Bengio, 2015, "Neural
-- Machine Translation by Jointly Learning to Align and Translate"): the
-- encoder is a bidirectional RNN of 1000 hidden units each way, so its
-- annotations h_j have 2000 dims; the decoder state has 1000 and the
-- alignment model 1000 units, e_ij = v . tanh(W s_i + U h_j), no bias.
-- Sentences of a batch differ in length: padding.  A decoder computes
-- U h_j once per sentence and passes it (args->u) at every step.
return {
  name = "bahdanau_rnnsearch",
  kind = "additive",
  query_dim = 1000,
  key_dim = 2000,
  attn_dim = 1000,
  padding = true,
}
