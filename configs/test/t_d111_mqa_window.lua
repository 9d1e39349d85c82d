-- Head dim 111, MQA, a two-sided window.
return { name = "t_d111_mqa_window", heads_q = 4, heads_kv = 1, head_dim = 111,
  window = { left = 7, right = 3 } }
