"""A tiny causal LM for the training tests: the project's builder when present, else the same recipe inline
(Qwen3 config, random init, byte-level BPE trained with `tokenizers`), saved and reloaded via from_pretrained."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "import pandas as pd\nfrom sklearn.linear_model import LogisticRegression\n",
    "train = pd.read_csv('train.csv')\ntest = pd.read_csv('test.csv')\n",
    "submission.to_csv('submission.csv', index=False)\n",
    "Observation: accuracy 0.81\nThought: try a gradient boosting model\n",
] * 20


def build_tiny(out_dir: Path, *, vocab_size: int = 512, hidden: int = 64, layers: int = 2) -> Path:
    out_dir = Path(out_dir)
    try:
        from engine.models.tiny import build_tiny_model
    except ImportError:
        build_tiny_model = None
    if build_tiny_model is not None:
        return Path(build_tiny_model(out_dir, corpus=CORPUS, hidden=hidden, layers=layers, vocab_size=vocab_size))
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|pad|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|eos|>")
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=tok.get_vocab_size(), hidden_size=hidden, intermediate_size=hidden * 2,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      max_position_embeddings=2048, pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id,
                      tie_word_embeddings=False)
    model = Qwen3ForCausalLM(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir
