-- Every tensor in bf16 (PyTorch's layout) with every mask rule: window, sinks, padding, bias, softcap, ALiBi.
return { name = "t_bf16_all", heads_q = 4, heads_kv = 2, head_dim = 72, causal = true,
  sliding_window = 40, global_tokens = 4, padding = true, mask = "bias", softcap = 30.0,
  alibi = true, dtype = "bf16" }
