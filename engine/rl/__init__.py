"""Training: trajectory-wise GRPO (own compact loop on torch + PEFT) and SFT (TRL) with LoRA adapters."""
