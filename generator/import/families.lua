--- The model families import-hf knows: which Hugging Face model_type maps
-- to which attention settings, the keys that hold the head count and the
-- hidden size across families, and the role of a model whose model_type is
-- not known, read from its architectures' class names.
local json = require("import.json")

local M = {}

-- Families.  role: "decoder" (causal), "text_encoder" (bidirectional,
-- padded batches), "vision_encoder" (bidirectional, fixed length),
-- "encoder_decoder" (Whisper: three configs), "t5" (T5, mT5: three configs with
-- T5's relative position bias in the self-attention ones).
-- window: how sliding_window applies when there is no layer_types list:
-- "all" every layer, "qwen2" layers from max_window_layers on when
-- use_sliding_window, "alternate" even layers (Gemma-2), nil ignored.
-- chunked: how attention_chunk_size applies when there is no layer_types
-- list: "llama4" the layers that use RoPE (no_rope_layers, by default all
-- but every no_rope_layer_interval-th layer).
-- text_config: the keys are read from the config's text_config object
-- (a multimodal model's language model).
-- kv: "falcon" reads Falcon's multi_query / new_decoder_architecture keys.
-- alibi: the family always adds ALiBi biases.
-- sinks: every layer has a learned sink logit per query head (gpt-oss's
-- self_attn.sinks): the configs get sinks = true.
-- mla: multi-head latent attention (DeepSeek-V2/V3, Kimi K2): two configs,
-- the absorbed decode over the latent cache (shared_kv) and the prefill.
-- pattern: sliding_window_pattern applies when there is no layer_types
-- list (Gemma-3: every pattern-th layer global, the others sliding).
-- reads: the attention-changing keys (hf.lua's ATTENTION_KEYS) the family
-- reads itself; the same keys elsewhere are an error unless --common-keys.
--
-- rope: the family rotates Q and K by RoPE (rotate_half pairs): the configs
-- get rope = {...} from rope_theta (or rope_theta_key), rope_scaling and the
-- partial rotary keys.
-- qk_norm: the family RMS-normalizes each head's Q and K rows before RoPE
-- (q_norm, k_norm with learned weights): the configs get qk_norm = {eps =
-- rms_norm_eps}, with offset = 1 where the weights are applied as (1 + w);
-- flag: the key that turns the norm on (absent: always on); rope_layers: only
-- the configs of RoPE layers get it (Llama 4's use_qk_norm, a norm without
-- weights after its RoPE: the caller passes weights of ones).
-- defaults: the values transformers' config class uses for absent keys.
-- note: a line for the header of every config of the family.
local LLAMA4_DEFAULTS = { attention_chunk_size = 8192, no_rope_layer_interval = 4, num_hidden_layers = 48,
  attn_temperature_tuning = true, attn_scale = 0.1, floor_scale = 8192, use_qk_norm = true, rms_norm_eps = 1e-5 }
local LLAMA4_READS = { no_rope_layers = true, attn_temperature_tuning = true }
local LLAMA4_NOTE = "Llama 4 rotates Q and K (RoPE) outside the kernel; its L2 norm of Q and K on the RoPE layers "
  .. "(use_qk_norm, after the rotation, without weights) is the kernel's qk_norm with weights of ones, and the "
  .. "attention temperature of its NoPE layers (attn_temperature_tuning) is the kernel's temperature key."
local LLAMA4_QK_NORM = { offset = 0, flag = "use_qk_norm", rope_layers = true }
local MLA_READS = { kv_lora_rank = true, qk_rope_head_dim = true, qk_nope_head_dim = true, v_head_dim = true }
local MLA_DEFAULTS = { kv_lora_rank = 512, qk_rope_head_dim = 64, qk_nope_head_dim = 128, v_head_dim = 128 }
local MLA_NOTE = "Multi-head latent attention: the decode config is the absorbed form over the latent cache (one row "
  .. "of kv_lora_rank + qk_rope_head_dim values a token, V its first kv_lora_rank values: shared_kv), the prefill "
  .. "config the per-head form; the projections (W_UK absorbed into the queries, W_UV into the output) and RoPE "
  .. "stay outside the kernel."
local GEMMA3_DEFAULTS = { num_attention_heads = 8, num_key_value_heads = 4, head_dim = 256, query_pre_attn_scalar = 256,
  sliding_window = 4096, sliding_window_pattern = 6, num_hidden_layers = 26, rope_theta = 1000000,
  rope_local_base_freq = 10000, rms_norm_eps = 1e-6 }
local GEMMA3_NOTE = "Gemma-3 normalizes Q and K (RMS norm times 1 + w: q_norm and k_norm) in the kernel (qk_norm), "
  .. "before its RoPE, which has two bases (rope_local_base_freq on sliding-window layers, rope_theta with "
  .. "rope_scaling on global ones)."
local QWEN3_NOTE = "Qwen3 normalizes Q and K (RMS norm times w: q_norm and k_norm) in the kernel (qk_norm), before "
  .. "its RoPE."
local FAMILIES = {
  llama = { label = "Llama", role = "decoder", rope = true, defaults = { rope_theta = 10000 } },
  llama4 = { label = "Llama 4", role = "decoder", chunked = "llama4", text_config = true, defaults = LLAMA4_DEFAULTS,
    note = LLAMA4_NOTE, reads = LLAMA4_READS, qk_norm = LLAMA4_QK_NORM },
  llama4_text = { label = "Llama 4", role = "decoder", chunked = "llama4", defaults = LLAMA4_DEFAULTS,
    note = LLAMA4_NOTE, reads = LLAMA4_READS, qk_norm = LLAMA4_QK_NORM },
  mistral = { label = "Mistral", role = "decoder", window = "all", rope = true,
    defaults = { sliding_window = 4096, rope_theta = 10000 } },
  mixtral = { label = "Mixtral", role = "decoder", window = "all", rope = true, defaults = { rope_theta = 1000000 } },
  qwen2 = { label = "Qwen2", role = "decoder", window = "qwen2", rope = true,
    defaults = { use_sliding_window = false, sliding_window = 4096, max_window_layers = 28, num_hidden_layers = 32,
      rope_theta = 10000 } },
  gemma = { label = "Gemma", role = "decoder", rope = true, defaults = { head_dim = 256, rope_theta = 10000 } },
  gemma3 = { label = "Gemma-3", role = "decoder", window = "pattern", text_config = true, defaults = GEMMA3_DEFAULTS,
    note = GEMMA3_NOTE, rope = true, rope_local_key = "rope_local_base_freq", qk_norm = { offset = 1 } },
  gemma3_text = { label = "Gemma-3", role = "decoder", window = "pattern", defaults = GEMMA3_DEFAULTS,
    note = GEMMA3_NOTE, rope = true, rope_local_key = "rope_local_base_freq", qk_norm = { offset = 1 } },
  qwen3 = { label = "Qwen3", role = "decoder", window = "qwen2", note = QWEN3_NOTE, rope = true,
    qk_norm = { offset = 0 },
    defaults = { use_sliding_window = false, sliding_window = 4096, max_window_layers = 28, num_hidden_layers = 32,
      rope_theta = 10000, rms_norm_eps = 1e-6 } },
  deepseek_v2 = { label = "DeepSeek-V2", role = "mla", reads = MLA_READS, defaults = MLA_DEFAULTS, note = MLA_NOTE },
  deepseek_v3 = { label = "DeepSeek-V3", role = "mla", reads = MLA_READS, defaults = MLA_DEFAULTS, note = MLA_NOTE },
  kimi_k2 = { label = "Kimi K2", role = "mla", reads = MLA_READS, defaults = MLA_DEFAULTS, note = MLA_NOTE },
  gemma2 = { label = "Gemma-2", role = "decoder", window = "alternate", rope = true,
    defaults = { head_dim = 256, sliding_window = 4096, attn_logit_softcapping = 50, query_pre_attn_scalar = 256,
      num_hidden_layers = 26, rope_theta = 10000 } },
  phi3 = { label = "Phi-3", role = "decoder", window = "all", rope = true,
    defaults = { rope_theta = 10000, partial_rotary_factor = 1.0 } },
  falcon = { label = "Falcon", role = "decoder", kv = "falcon", rope = true, defaults = { rope_theta = 10000 } },
  RefinedWebModel = { label = "Falcon", role = "decoder", kv = "falcon", rope = true,
    defaults = { rope_theta = 10000 } },
  RefinedWeb = { label = "Falcon", role = "decoder", kv = "falcon", rope = true,
    defaults = { new_decoder_architecture = true, rope_theta = 10000 } },
  gpt_neox = { label = "GPT-NeoX", role = "decoder", rope = true, rope_theta_key = "rotary_emb_base",
    defaults = { rotary_emb_base = 10000, rotary_pct = 0.25 } },
  bloom = { label = "BLOOM", role = "decoder", alibi = true },
  gpt2 = { label = "GPT-2", role = "decoder" },
  gpt_oss = { label = "gpt-oss", role = "decoder", sinks = true, rope = true,
    defaults = { rope_theta = 150000 } },
  bert = { label = "BERT", role = "text_encoder" },
  roberta = { label = "RoBERTa", role = "text_encoder" },
  ["xlm-roberta"] = { label = "XLM-RoBERTa", role = "text_encoder" },
  vit = { label = "ViT", role = "vision_encoder" },
  whisper = { label = "Whisper", role = "encoder_decoder" },
  t5 = { label = "T5", role = "t5", defaults = { relative_attention_num_buckets = 32,
    relative_attention_max_distance = 128 } },
  mt5 = { label = "mT5", role = "t5", defaults = { relative_attention_num_buckets = 32,
    relative_attention_max_distance = 128 } },
}

--- The keys that hold the number of query heads, and the hidden size, in
-- the order they are tried.
M.HEADS_KEYS = { "num_attention_heads", "n_head", "n_heads" }
M.HIDDEN_KEYS = { "hidden_size", "n_embd", "d_model" }

--- The family of a model_type, or nil.
function M.get(model_type)
  if type(model_type) ~= "string" then return nil end
  return FAMILIES[model_type]
end

--- The model_type values import-hf knows, sorted.
function M.names()
  local names = {}
  for k in pairs(FAMILIES) do names[#names + 1] = k end
  table.sort(names)
  return names
end

--- Causal or not, for a model_type import-hf does not know: from the
-- architectures' class names.  Returns role, reason or nil.
function M.role_from_architectures(archs)
  if type(archs) ~= "table" then return nil end
  for _, a in ipairs(archs) do
    if type(a) == "string" and (a:match("ForCausalLM$") or a:match("LMHeadModel$")) then
      return "decoder", json.plain(a) .. " is a causal decoder"
    end
  end
  for _, a in ipairs(archs) do
    if type(a) == "string" and a:match("ForMaskedLM$") then
      return "text_encoder", json.plain(a) .. " is a bidirectional encoder"
    end
    if type(a) == "string" and a:match("ForImageClassification$") then
      return "vision_encoder", json.plain(a) .. " is a bidirectional encoder"
    end
  end
  return nil
end

return M
