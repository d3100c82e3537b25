"""Model-size presets of the (Prompt-)DTs (light, no JAX)."""

SIZES: dict[str, dict[str, int]] = {
    "small": {"embed_dim": 64, "n_layers": 2, "n_heads": 2},
    "medium": {"embed_dim": 128, "n_layers": 3, "n_heads": 4},
    "large": {"embed_dim": 256, "n_layers": 4, "n_heads": 8},
}
"""Model-size presets of the (Prompt-)DTs for the scaling study (``PromptDTConfig.size(name)``)."""
