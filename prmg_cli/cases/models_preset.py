"""Real models' RoPE shapes (``MODELS``) and the ``models`` preset made from them.

Each entry holds a model's attention heads, KV heads, head dim, the rotated part of a head (a half-open
slice of its last axis), its rotary mode, RoPE base and context length, each taken from the model's
``config.json`` or model card (``sources``), and the dtypes its cases use (bfloat16 as the checkpoints
ship, with float32 tables where the mixed-precision kernel should be exercised: a choice, not a model fact).

The preset makes, per model, with RoPE tables of the model's base:

- **prefill**: dy = the K projection's gradient ``[1, PREFILL_TOKENS, KV heads, head dim]`` (for DeepSeek's
  MLA, whose RoPE part of K is one shared head, the Q one of a tensor-parallel shard of 8: 16 heads), tables
  ``1S1D``; the forward on the same shape;
- **decode**: ``[DECODE_BATCH, 1, heads, head dim]``, one token per request, tables ``B11D`` with per-request
  positions spread over the context (``rope: {offset: [...]}``), so cos/sin vary along B;
- **long** (tag ``long``, models with a 128k context): one head over ``LONG_TOKENS`` positions as rows
  ``[1, 131072, 1, head dim]``: rows past 16 bits, angles at positions up to 131071.

The tables are plain RoPE of the model's base: the frequency scaling some models add for long contexts
(Llama 3.1's ``rope_scaling``, DeepSeek's YaRN) changes the table's values, not what the kernel does with
them. ``PREFILL_TOKENS`` and ``DECODE_BATCH`` are typical sizes, chosen, not taken from a source.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .. import dtypes
from ..vocab import DEFAULT_SUPPORTED_MODES, ROTARY_MODES, mode_list
from .gencase import document, header, preset_case, rope_inputs

PREFILL_TOKENS = 2048        # one prefill of 2048 tokens (batch 1)
DECODE_BATCH = 64            # requests decoded together, one token each
LONG_TOKENS = 131072         # 128k tokens of one head as rows
LONG_TAG = "long"            # the tag of those cases (seconds each): CI chooses them, cases/ leaves them out


@dataclass(frozen=True)
class Model:
    """One model's RoPE geometry and where each number comes from."""

    name: str
    heads: int                       # query heads
    kv_heads: int                    # key/value heads (heads when there is no GQA)
    head_dim: int                    # the last axis the kernel sees
    rotary: tuple[int, int]          # the rotated slice [start, end) of a head
    mode: str                        # rotary mode (vocab.ROTARY_MODES)
    base: float                      # RoPE base (rope_theta)
    context: int                     # positions the model takes
    dtype: str                       # dy's dtype in its cases
    table_dtype: str                 # cos/sin dtype in its cases
    sources: tuple[str, ...]         # config.json / model card / reference code the numbers come from
    kv_shared_rope: bool = False     # MLA: K's RoPE part is one head shared by all (prefill takes Q)
    shard: int = 1                   # prefill takes Q's heads / shard (tensor parallelism: a choice)


MODELS = (
    Model("llama3.1_8b", heads=32, kv_heads=8, head_dim=128, rotary=(0, 128), mode="half", base=500000.0,
          context=131072, dtype="bfloat16", table_dtype="bfloat16",
          sources=("https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json "
                   "(num_attention_heads 32, num_key_value_heads 8, head_dim 128, rope_theta 500000, "
                   "max_position_embeddings 131072; as mirrored at "
                   "https://huggingface.co/NbAiLab/nb-llama-3.1-8B/blob/main/config.json)",
                   "transformers LlamaRotaryEmbedding / rotate_half: the half mode")),
    Model("qwen2.5_7b", heads=28, kv_heads=4, head_dim=128, rotary=(0, 128), mode="half", base=1000000.0,
          context=131072, dtype="bfloat16", table_dtype="bfloat16",
          sources=("https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json (num_attention_heads 28, "
                   "num_key_value_heads 4, hidden_size 3584 = 28 x 128, rope_theta 1000000, "
                   "max_position_embeddings 131072; as mirrored at "
                   "https://huggingface.co/AmberYifan/Qwen2.5-7B-gen-dpo-10k/blob/"
                   "06301e9ceb9578f3c5ce6a4244af885d85f275ad/config.json)",)),
    Model("glm4_9b", heads=32, kv_heads=2, head_dim=128, rotary=(0, 64), mode="interleave", base=5000000.0,
          context=131072, dtype="bfloat16", table_dtype="float32",
          sources=("https://huggingface.co/THUDM/glm-4-9b-chat/blame/731ca7fd937cff9f2ae5f01de85a0c8bf21df6fa/"
                   "config.json "
                   "(num_attention_heads 32, multi_query_group_num 2, kv_channels 128, rope_ratio 500, "
                   "seq_length 131072)",
                   "vllm-project/vllm vllm/model_executor/models/chatglm.py: get_rope(self.head_dim, "
                   "rotary_dim=self.head_dim // 2, max_position=max_positions, base=10000 * rope_ratio, "
                   "is_neox_style=False): the first half of a head, interleaved pairs")),
    Model("gptj_6b", heads=16, kv_heads=16, head_dim=256, rotary=(0, 64), mode="interleave", base=10000.0,
          context=2048, dtype="float16", table_dtype="float16",
          sources=("https://huggingface.co/EleutherAI/gpt-j-6b (model card: n_heads 16, d_head 256, RoPE "
                   "dimensions 64, n_ctx 2048; config.json rotary_dim 64)",
                   "transformers modeling_gptj rotate_every_two: interleaved pairs")),
    Model("phi2", heads=32, kv_heads=32, head_dim=80, rotary=(0, 32), mode="half", base=10000.0, context=2048,
          dtype="float16", table_dtype="float32",
          sources=("https://huggingface.co/microsoft/phi-2/blob/main/config.json (num_attention_heads 32, "
                   "hidden_size 2560 = 32 x 80, partial_rotary_factor 0.4: 32 of 80 dims, rope_theta 10000, "
                   "max_position_embeddings 2048; as mirrored at "
                   "https://huggingface.co/Ziming2000/phi2-code-sft/blob/main/config.json)",)),
    Model("deepseek_v3", heads=128, kv_heads=128, head_dim=192, rotary=(128, 192), mode="interleave-half",
          base=10000.0, context=163840, dtype="bfloat16", table_dtype="bfloat16", kv_shared_rope=True, shard=8,
          sources=("https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json (num_attention_heads "
                   "128, qk_nope_head_dim 128, qk_rope_head_dim 64: RoPE on [128, 192) of a 192-wide query "
                   "head, rope_theta 10000, max_position_embeddings 163840; as mirrored at "
                   "https://gitcode.com/cann/cann-recipes-train/blob/master/llm_rl/deepseek/verl_patches/config.json)",
                   "its modeling_deepseek apply_rotary_pos_emb de-interleaves q and k before rotate_half: the "
                   "interleave-half mode")),
)


def decode_positions(model: Model, batch: int = DECODE_BATCH) -> list[int]:
    """Per-request positions for a decode batch: spread over the model's context, all different
    (``b * (context // batch) + b % 7``)."""
    return [index * (model.context // batch) + index % 7 for index in range(batch)]


def _cases(model: Model) -> list[tuple[dict, str]]:
    """(case mapping, comment) of each case of ``model`` (module docstring)."""
    short = dtypes.lookup(model.dtype).short
    common = dict(partial_slice=model.rotary, mode=model.mode, dtype=model.dtype, cos_dtype=model.table_dtype)
    heads = model.heads // model.shard if model.kv_shared_rope else model.kv_heads
    side = f"Q (one of {model.shard} tensor-parallel shards)" if model.kv_shared_rope else "K"
    prefill = (1, PREFILL_TOKENS, heads, model.head_dim)
    made = [
        (preset_case("models", ("models", "prefill"), f"{model.name}.prefill_{short}", shape=prefill,
                     broadcast="1S1D", inputs=rope_inputs(model.base, 0), **common),
         f"{model.name} prefill: the {side} gradient of {PREFILL_TOKENS} tokens, {heads} heads of {model.head_dim}"),
        (preset_case("models", ("models", "prefill", "forward"), f"{model.name}.prefill_forward_{short}",
                     op="forward", shape=prefill, broadcast="1S1D", inputs=rope_inputs(model.base, 0), **common),
         f"{model.name} prefill, the forward on the same {side}"),
        (preset_case("models", ("models", "decode"), f"{model.name}.decode_b{DECODE_BATCH}_{short}",
                     shape=(DECODE_BATCH, 1, model.heads, model.head_dim), broadcast="B11D",
                     inputs=rope_inputs(model.base, decode_positions(model)), **common),
         f"{model.name} decode: {DECODE_BATCH} requests, one token each at its own position (cos/sin per request)"),
    ]
    if model.context >= LONG_TOKENS:
        name = f"{model.name}.long_{LONG_TOKENS // 1024}k_{short}"
        made.append((preset_case("models", ("models", LONG_TAG), name, shape=(1, LONG_TOKENS, 1, model.head_dim),
                                 broadcast="1S1D", inputs=rope_inputs(model.base, 0), **common),
                     f"{model.name} long context: one head over {LONG_TOKENS} positions as rows"))
    return made


def mode_lines(supported=DEFAULT_SUPPORTED_MODES) -> list[str]:
    """Per model its rotary mode and whether a target implementing the modes ``supported`` (today's kernel:
    interleave only) runs its cases or skips them."""
    return [f"  {model.name}: {model.mode}" + ("" if ROTARY_MODES[model.mode] in supported else " (skipped today)")
            for model in MODELS]


def models_document() -> dict:
    """The ``models`` preset: ``_cases`` of every model of ``MODELS``, each with a comment naming its sources,
    and in its header each model's rotary mode (``mode_lines``)."""
    cases, comments = [], {}
    for model in MODELS:
        for number, (case, what) in enumerate(_cases(model)):
            cases.append(case)
            text = what + ("" if number else "; from: " + "; ".join(model.sources))
            comments[case["name"]] = textwrap.fill(text, 110, break_long_words=False, break_on_hyphens=False)
    return document(cases, comments=comments, header=[*header(
        "models", "real models' RoPE shapes (prmg_cli/cases/models_preset.py, each number with its source): "
        f"prefill of {PREFILL_TOKENS} tokens, decode of {DECODE_BATCH} requests with per-request positions, and (tag "
        f"long) {LONG_TOKENS} tokens as rows for models with a 128k context", module="prmg_cli/cases/models_preset.py"),
        f"Rotary mode per model: today's target implements {mode_list(DEFAULT_SUPPORTED_MODES)} only and skips the "
        f"cases of the others", "(--supported-modes 0,1,2,3 runs them; the emulator has every mode):",
        *mode_lines()])
