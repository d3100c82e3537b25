"""The Prompt Decision Transformer for CoMP cell selection, with per-user discrete actions.

Each timestep gives three tokens (return-to-go, state, action); a state token pools every real user's
embedding (a per-user MLP shared by all users, optionally followed by ``user_layers`` blocks over the
users), an action token pools each user's action one-hot embedded with that user's state. A prompt (a
demonstration segment of the task) precedes the history with its own embeddings; a pre-LN causal
transformer reads both. At each state token a per-user head combines the output with the user's own
embedding into ``MAX_CELLS + 1`` logits: ``(B, K, MAX_USERS, MAX_CELLS + 1)``, ``-inf`` where a cell is
absent or a user padded (padded users may only keep).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.agents.common import check_bool, check_int, check_number
from decisions.telecom.comp.dt.sizes import SIZES
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.settings import EPISODE_LENGTH

__all__ = [
    "N_ACTIONS",
    "N_FEATURES",
    "PromptDT",
    "PromptDTConfig",
    "Segment",
    "count_params",
    "dummy_segment",
    "init_params",
    "size",
]

N_FEATURES = 2 * MAX_CELLS + 1
"""Per-user feature width of ``CompEnv``'s observation (flags, normalised SNRs, utility)."""
N_ACTIONS = MAX_CELLS + 1
"""Per-user action choices: a serving-set size ``0..MAX_CELLS`` (or, in toggle mode, keep and
toggle cell ``k - 1`` for ``k = 1..MAX_CELLS``)."""

_NEG = -1e9  # finite "minus infinity" for pooling


@dataclass(frozen=True)
class PromptDTConfig:
    """Architecture of a (Prompt) Decision Transformer and its training constants.

    The training fields (learning rate to ``n_demos``) are read by ``dt_train``; they sit here
    so that one config, saved in the checkpoint, describes how to rebuild and use the model
    (``rtg_scale`` is needed at inference too).
    """

    embed_dim: int = 128
    """Width of tokens and of the transformer."""
    n_layers: int = 3
    """Transformer blocks."""
    n_heads: int = 4
    """Attention heads (must divide ``embed_dim``)."""
    dropout: float = 0.1
    """Dropout rate on embeddings, attention and MLP outputs during training."""
    context_len: int = 20
    """K: steps of history the model reads (3 K tokens)."""
    prompt_len: int = 5
    """Steps of the demonstration segment prepended as prompt (3 P tokens)."""
    max_ep_len: int = EPISODE_LENGTH
    """Size of the timestep embedding tables (later steps are clipped to the last entry)."""
    mlp_ratio: int = 4
    """Hidden width of the transformer MLP, in multiples of ``embed_dim``."""
    rtg_scale: float = 100.0
    """Returns-to-go are divided by this before embedding (CoMP returns lie in [-T, T])."""
    learning_rate: float = 1e-4
    """Peak AdamW learning rate (after linear warmup, then cosine decay to 10 %)."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    warmup_steps: int = 100
    """Linear warmup steps (capped at the number of training steps)."""
    grad_clip: float = 0.25
    """Global gradient-norm clip."""
    n_demos: int = 5
    """Best-return trajectories per task that form its demonstration set (prompts)."""
    link_features: bool = False
    """Keep each user's connection flags in the state embedding. Off by default: with serving-set actions
    they are the previous action, which a model learns to copy instead of reading the channel."""
    user_layers: int = 0
    """Transformer blocks over the users of each step (every user's embedding attends to the
    other real users of the same step) before pooling and the action head; 0 = none. They let
    one user's decision depend on the others' (who shares its cells) rather than only on the
    pooled summary, at a cost that does not grow with the history length."""
    user_ids: bool = False
    """Append each user's slot index (one-hot) to its features: the per-task experts read the
    whole observation vector, so their decision may depend on the slot; False keeps the model
    equivariant to the order of users."""

    def __post_init__(self) -> None:
        """Check every field; raise ``ValueError("field: problem")`` on the first bad one."""
        positive = ("embed_dim", "n_layers", "n_heads", "context_len", "prompt_len", "max_ep_len", "mlp_ratio", "n_demos")
        for name in positive:
            check_int(name, getattr(self, name), 1)
        for name in ("warmup_steps", "user_layers"):
            check_int(name, getattr(self, name), 0)
        if self.embed_dim % self.n_heads:
            raise ValueError(
                f"embed_dim: must be a multiple of n_heads = {self.n_heads}, got {self.embed_dim}"
            )
        check_number("dropout", self.dropout, 0.0, 1.0)
        if self.dropout >= 1.0:
            raise ValueError(f"dropout: must be below 1, got {self.dropout!r}")
        for name in ("rtg_scale", "learning_rate", "grad_clip"):
            check_number(name, getattr(self, name), 0.0, math.inf, open_low=True)
        check_number("weight_decay", self.weight_decay, 0.0, math.inf)
        for name in ("link_features", "user_ids"):
            check_bool(name, getattr(self, name))

    @classmethod
    def size(cls, name: str, **overrides: Any) -> PromptDTConfig:
        """A size preset (``"small"``, ``"medium"``, ``"large"``) with keyword ``overrides``."""
        if name not in SIZES:
            raise ValueError(f"size: must be one of {', '.join(SIZES)}, got {name!r}")
        return cls(**{**SIZES[name], **overrides})

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict (checkpoint metadata)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromptDTConfig:
        """Rebuild from ``to_dict`` output (unknown keys raise ``ValueError``)."""
        names = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - names)
        if extra:
            raise ValueError(f"config: unknown fields {extra}")
        return cls(**data)


def size(name: str, **overrides: Any) -> PromptDTConfig:
    """``PromptDTConfig.size``: a size preset with keyword ``overrides``."""
    return PromptDTConfig.size(name, **overrides)


@struct.dataclass
class Segment:
    """A run of timesteps as model input (history or prompt), leading axes ``(B, L)``: ``rtg`` (divided by
    ``rtg_scale``), ``obs`` ``(B, L, MAX_USERS, N_FEATURES)``, ``actions`` ``(B, L, MAX_USERS)`` in
    ``[0, MAX_CELLS]``, ``timesteps`` and ``mask`` (False = padding)."""

    rtg: Array
    obs: Array
    actions: Array
    timesteps: Array
    mask: Array


def dummy_segment(batch: int, length: int, n_users: int = MAX_USERS, n_features: int = N_FEATURES) -> Segment:
    """An all-zero, all-valid segment of the given shape (for ``init``)."""
    return Segment(
        rtg=jnp.zeros((batch, length), jnp.float32),
        obs=jnp.zeros((batch, length, n_users, n_features), jnp.float32),
        actions=jnp.zeros((batch, length, n_users), jnp.int32),
        timesteps=jnp.zeros((batch, length), jnp.int32),
        mask=jnp.ones((batch, length), bool),
    )


def _pool(u: Array, mask: Array) -> Array:
    """Masked mean and max over the user axis: ``(..., U, d), (..., U) -> (..., 2 d)``."""
    m = mask[..., None]
    n = jnp.maximum(jnp.sum(m, axis=-2), 1)
    mean = jnp.sum(jnp.where(m, u, 0.0), axis=-2) / n
    mx = jnp.max(jnp.where(m, u, _NEG), axis=-2)
    mx = jnp.where(jnp.any(m, axis=-2), mx, 0.0)
    return jnp.concatenate([mean, mx], axis=-1)


class _Block(nn.Module):
    """Pre-LN transformer block: ``x + attn(LN x)``, then ``x + mlp(LN x)``."""

    dim: int
    heads: int
    dropout: float
    mlp_ratio: int

    @nn.compact
    def __call__(self, x: Array, mask: Array, deterministic: bool) -> Array:
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(
            num_heads=self.heads, dropout_rate=self.dropout, deterministic=deterministic
        )(h, mask=mask)
        x = x + nn.Dropout(self.dropout)(h, deterministic=deterministic)
        h = nn.LayerNorm()(x)
        h = nn.gelu(nn.Dense(self.dim * self.mlp_ratio)(h))
        h = nn.Dense(self.dim)(h)
        return x + nn.Dropout(self.dropout)(h, deterministic=deterministic)


class _UserMLP(nn.Module):
    """Two-layer MLP applied to each user row (shared weights)."""

    dim: int

    @nn.compact
    def __call__(self, x: Array) -> Array:
        return nn.Dense(self.dim)(nn.gelu(nn.Dense(self.dim)(x)))


class PromptDT(nn.Module):
    """Prompt Decision Transformer with a per-user action head (see the module docstring).

    ``apply(params, history, user_mask, cell_mask, prompt=None, deterministic=True)`` returns
    masked logits ``(B, K, MAX_USERS, MAX_CELLS + 1)``, one row per history step, predicted at
    that step's state token (so from ``prompt``, ``R_<=t``, ``s_<=t``, ``a_<t``). With
    ``prompt=None`` the prompt tokens are dropped: a plain Decision Transformer with the
    same parameters. Dropout needs ``rngs={"dropout": key}`` when ``deterministic=False``.
    """

    config: PromptDTConfig

    @nn.compact
    def __call__(
        self,
        history: Segment,
        user_mask: Array,
        cell_mask: Array,
        prompt: Segment | None = None,
        deterministic: bool = True,
    ) -> Array:
        cfg = self.config
        d = cfg.embed_dim
        n_act = cell_mask.shape[-1] + 1
        user_mask = jnp.asarray(user_mask, bool)
        cell_mask = jnp.asarray(cell_mask, bool)

        state_mlp = _UserMLP(d, name="state_user_mlp")
        state_proj = nn.Dense(d, name="state_proj")
        act_in = nn.Dense(d, name="action_onehot")
        act_user = nn.Dense(d, name="action_user")
        act_out = nn.Dense(d, name="action_user_out")
        act_proj = nn.Dense(d, name="action_proj")
        rtg_proj = nn.Dense(d, name="rtg_proj")
        time_emb = nn.Embed(cfg.max_ep_len, d, name="time_embed")
        type_emb = self.param("type_embed", nn.initializers.normal(0.02), (3, d))
        p_time = self.param("prompt_time_embed", nn.initializers.normal(0.02), (cfg.max_ep_len, d))
        p_type = self.param("prompt_type_embed", nn.initializers.normal(0.02), (3, d))
        user_blocks = [
            _Block(d, cfg.n_heads, cfg.dropout, cfg.mlp_ratio, name=f"user_block_{j}") for j in range(cfg.user_layers)
        ]

        def users(obs: Array) -> Array:
            """Per-user embeddings ``(B, L, U, d)``: the shared MLP, then the user blocks."""
            if cfg.user_ids:
                ids = jnp.broadcast_to(jnp.eye(obs.shape[-2], dtype=obs.dtype), (*obs.shape[:-1], obs.shape[-2]))
                obs = jnp.concatenate([obs, ids], axis=-1)
            u = state_mlp(obs)
            if not user_blocks:
                return u
            b, length, n_users, _ = u.shape
            x = u.reshape(b * length, n_users, d)
            keys = jnp.repeat(user_mask, length, axis=0)[:, None, None, :]  # (B L, 1, 1, U)
            mask = jnp.broadcast_to(keys, (b * length, 1, n_users, n_users)) | jnp.eye(n_users, dtype=bool)
            for block in user_blocks:
                x = block(x, mask, deterministic)
            return x.reshape(b, length, n_users, d)

        def encode(seg: Segment, is_prompt: bool) -> tuple[Array, Array, Array]:
            """Tokens ``(B, 3 L, d)``, their validity ``(B, 3 L)`` and user embeddings ``(B, L, U, d)``."""
            umask = user_mask[:, None, :]  # (B, 1, U)
            obs = seg.obs if cfg.link_features else seg.obs.at[..., :MAX_CELLS].set(0.0)
            u = users(obs)  # (B, L, U, d)
            s_tok = state_proj(_pool(u, umask))
            one_hot = jax.nn.one_hot(seg.actions, n_act, dtype=u.dtype)
            au = act_out(nn.gelu(act_in(one_hot) + act_user(u)))
            a_tok = act_proj(_pool(au, umask))
            r_tok = rtg_proj(seg.rtg[..., None].astype(jnp.float32))
            t = jnp.clip(seg.timesteps, 0, cfg.max_ep_len - 1)
            t_emb = p_time[t] if is_prompt else time_emb(t)
            kinds = p_type if is_prompt else type_emb
            tok = jnp.stack([r_tok, s_tok, a_tok], axis=2) + kinds + t_emb[:, :, None, :]
            b, length = seg.rtg.shape
            valid = jnp.repeat(jnp.asarray(seg.mask, bool), 3, axis=1)
            return tok.reshape(b, 3 * length, d), valid, u

        tokens, valid, u_hist = encode(history, False)
        n_prompt = 0
        if prompt is not None:
            p_tok, p_valid, _ = encode(prompt, True)
            n_prompt = p_tok.shape[1]
            tokens = jnp.concatenate([p_tok, tokens], axis=1)
            valid = jnp.concatenate([p_valid, valid], axis=1)

        return _decode(cfg, tokens, valid, n_prompt, u_hist, user_mask, cell_mask, deterministic)


def _decode(
    cfg: PromptDTConfig, tokens: Array, valid: Array, n_prompt: int, u_hist: Array, user_mask: Array,
    cell_mask: Array, deterministic: bool,
) -> Array:
    """``PromptDT``'s causal trunk over ``tokens`` and its per-user action head: logits ``(B, K, U, C + 1)``,
    -inf on absent cells (padded users may only keep). Called inside ``PromptDT.__call__``: the layers
    it creates are ``PromptDT``'s, with their names."""
    d, n_act = cfg.embed_dim, cell_mask.shape[-1] + 1
    length = tokens.shape[1]
    eye = jnp.eye(length, dtype=bool)
    causal = jnp.tril(jnp.ones((length, length), bool))
    attn_mask = (causal & (valid[:, None, :] | eye))[:, None]  # (B, 1, L, L)

    x = nn.LayerNorm(name="embed_ln")(tokens)
    x = nn.Dropout(cfg.dropout)(x, deterministic=deterministic)
    for i in range(cfg.n_layers):
        x = _Block(d, cfg.n_heads, cfg.dropout, cfg.mlp_ratio, name=f"block_{i}")(
            x, attn_mask, deterministic
        )
    x = nn.LayerNorm(name="final_ln")(x)

    h_state = x[:, n_prompt + 1 :: 3]  # (B, K, d): outputs at the state tokens
    h_users = jnp.broadcast_to(h_state[:, :, None, :], u_hist.shape)
    z = jnp.concatenate([h_users, u_hist], axis=-1)
    z = nn.gelu(nn.Dense(d, name="head_hidden")(z))
    logits = nn.Dense(n_act, kernel_init=nn.initializers.normal(0.01), name="head_out")(z)

    keep = jnp.arange(n_act) == 0
    allowed = jnp.concatenate([jnp.ones_like(cell_mask[:, :1]), cell_mask], axis=-1)  # (B, C+1)
    allowed = jnp.where(user_mask[:, :, None], allowed[:, None, :], keep)  # (B, U, C+1)
    return jnp.where(allowed[:, None], logits, -jnp.inf)


def init_params(config: PromptDTConfig, key: Array) -> Any:
    """Initial parameters of ``PromptDT(config)`` (prompt embeddings included)."""
    hist = dummy_segment(1, config.context_len)
    prompt = dummy_segment(1, config.prompt_len)
    umask = jnp.ones((1, MAX_USERS), bool)
    cmask = jnp.ones((1, MAX_CELLS), bool)
    return jax.jit(PromptDT(config).init)(key, hist, umask, cmask, prompt)


def count_params(params: Any) -> int:
    """Number of scalars in a parameter pytree (arrays or ``jax.eval_shape`` structs)."""
    return int(sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(params)))
