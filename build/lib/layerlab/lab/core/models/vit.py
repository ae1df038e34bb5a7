"""A tiny pre-norm Vision Transformer for 8x8 digits, built as a routed model (stem, blocks, head).

stem:    2x2 patches -> 16 tokens, linearly projected to `width`, plus a CLS token and learned positions. With
         `seq` > 0 the input is a sequence instead (MNIST-1D: 40 values): cut into patches of `patch` values
         (40 / 4 -> 10 tokens), the rest is the same.
blocks:  pre-norm transformer blocks  h = h + attn(ln(h));  h = h + mlp(ln(h)).  Because every block adds a
         correction to a residual stream of fixed width, any route (deleted, shuffled, repeated blocks) runs.
head:    final LayerNorm and a linear classifier on the CLS token.

Slot modes (LayerShuffle, Freiberger et al. 2024), for models trained in a random block order:
  "none":      blocks are not told where they run.
  "position":  the official code's variant (matfrei/layershuffle, `postition_encoding_vit.py`): ONE depth
               embedding table (slots x 32, zero-initialised, shared by all blocks, `stem.depth_embed`); before
               a block runs, the row of its *current slot* is concatenated with every token of the stream and
               passed through the block's own LayerNorm -> Linear -> GELU (`blocks.i.slot_proj`), whose output
               is added back to the stream.
  "predict":   each block owns a small head (LayerNorm -> Linear) that predicts its current slot from the mean
               token of its output; `loss` adds that cross-entropy (mean over the route's blocks, weight 1).
Sub-layer order (IOT, Zhu et al. 2021): the block variant "mlp_first" runs the same block as
  h = h + mlp(ln2(h));  h = h + attn(ln1(h))  (same weights, same parameter count); see `base.Step`.
Sub-layer deletion: the variants "no_attn" (h = h + mlp(ln2(h))) and "no_mlp" (h = h + attn(ln1(h))).
LayerNorm scaling (`ln_scale`, Sun et al. 2025): block i's LayerNorm outputs times 1 / sqrt(i + 1).
Parameter names are prefixed `stem.`, `blocks.<i>.` and `head.`, so per-layer surgery can find each layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from lab.core.models.base import Route, RoutedModel

SLOT_MODES = ("none", "position", "predict")
DEPTH_EMBED = 32  # width of the shared depth embedding of "position" (the official code's projection_dim)
MLP_FIRST = "mlp_first"  # the block variant (see `base.Step`) that runs the MLP sub-layer before attention
NO_ATTN = "no_attn"  # the block variant without its attention sub-layer: h = h + mlp(ln2(h))
NO_MLP = "no_mlp"  # the block variant without its MLP sub-layer: h = h + attn(ln1(h))
VARIANTS = (MLP_FIRST, NO_ATTN, NO_MLP)


@dataclass(frozen=True)
class ViTConfig:
    """Shape of the ViT. `image` is the side of the square input, `patch` the side of a patch.

    `seq` > 0: the input is a flat sequence of `seq` values per channel (MNIST-1D: 40), cut into `seq / patch`
    patches of `patch` consecutive values; `image` is then unused. `seq` = 0 (the default): an image, as above."""

    depth: int = 6
    width: int = 64
    heads: int = 4
    mlp_ratio: int = 2
    patch: int = 2
    image: int = 8
    channels: int = 1
    n_classes: int = 10
    slot_mode: str = "none"
    stem_scale: float = 1.0  # scale of the stem's initial draw (1: a unit-scale stream); see reset_parameters
    seq: int = 0  # > 0: a 1-D input of this length in patches of `patch` values (0: an image of side `image`)
    # LayerNorm scaling (Sun et al. 2025, "The Curse of Depth"): the outputs of block i's two LayerNorms are scaled by
    # 1 / sqrt(i + 1), i + 1 the block's 1-based depth in the trained order (the scale belongs to the block, so a
    # deleted or moved block keeps its computation). False (the default): the ViT as it always was, bit for bit.
    ln_scale: bool = False

    def __post_init__(self) -> None:
        if self.slot_mode not in SLOT_MODES:
            raise ValueError(f"unknown slot mode {self.slot_mode!r}; choose one of {', '.join(SLOT_MODES)}")
        if not 0.0 < self.stem_scale <= 10.0:
            raise ValueError(f"the stem's init scale must be in (0, 10], got {self.stem_scale}")
        if not 1 <= self.depth <= 32:
            raise ValueError(f"depth must be between 1 and 32 blocks, got {self.depth}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} must be a multiple of heads {self.heads}")
        if self.seq < 0:
            raise ValueError(f"the sequence length must be >= 0 (0: an image), got {self.seq}")
        if self.seq and self.seq % self.patch:
            raise ValueError(f"sequence length {self.seq} must be a multiple of the patch length {self.patch}")
        if not self.seq and self.image % self.patch:
            raise ValueError(f"image side {self.image} must be a multiple of the patch side {self.patch}")

    @property
    def n_patches(self) -> int:
        if self.seq:
            return self.seq // self.patch
        return (self.image // self.patch) ** 2

    @property
    def n_in(self) -> int:
        if self.seq:
            return self.channels * self.seq
        return self.channels * self.image * self.image

    @property
    def patch_size(self) -> int:
        """Values in one patch (the stem's input width): channels x patch (a sequence) or channels x patch^2."""
        return self.channels * self.patch * (1 if self.seq else self.patch)


class Stem(nn.Module):
    """Image (or sequence) -> tokens: patch projection, CLS token, learned position embeddings."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Linear(cfg.patch_size, cfg.width)
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.width))
        self.pos = nn.Parameter(torch.zeros(1, cfg.n_patches + 1, cfg.width))
        # "position": one slot embedding shared by every block (it belongs to no block, so it lives in the stem)
        self.depth_embed = nn.Parameter(torch.zeros(cfg.depth, DEPTH_EMBED)) if cfg.slot_mode == "position" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, s, p = self.cfg.channels, self.cfg.image, self.cfg.patch
        if self.cfg.seq:
            n = self.cfg.seq
            # (B, C, L) -> (B, L/p, C*p): non-overlapping runs of p values, in order; channel-major in a patch
            x = x.reshape(-1, c, n // p, p).transpose(1, 2).reshape(-1, n // p, c * p)
        else:
            x = x.reshape(-1, c, s, s)
            # (B, C, S, S) -> (B, S/p * S/p, C*p*p): non-overlapping patches, row-major
            x = F.unfold(x, kernel_size=p, stride=p).transpose(1, 2)
        tok = self.proj(x)
        cls = self.cls.expand(tok.shape[0], -1, -1)
        return torch.cat([cls, tok], dim=1) + self.pos


class ScaledLayerNorm(nn.LayerNorm):
    """A LayerNorm whose output is multiplied by a fixed `scale` (LayerNorm scaling; the parameters are a
    LayerNorm's, under the same names)."""

    def __init__(self, width: int, scale: float) -> None:
        super().__init__(width)
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * self.scale


class Block(nn.Module):
    """One pre-norm transformer block, with the optional slot embedding table or slot-prediction head."""

    def __init__(self, cfg: ViTConfig, index: int = 0) -> None:
        super().__init__()
        w = cfg.width
        self.heads = cfg.heads
        # LayerNorm scaling: 1 / sqrt(depth index), the index 1-based (modules in the original order: the init
        # draws parameters in registration order)
        scale = 1.0 / math.sqrt(index + 1) if cfg.ln_scale else None
        self.ln1 = nn.LayerNorm(w) if scale is None else ScaledLayerNorm(w, scale)
        self.qkv = nn.Linear(w, 3 * w)
        self.proj = nn.Linear(w, w)
        self.ln2 = nn.LayerNorm(w) if scale is None else ScaledLayerNorm(w, scale)
        self.fc1 = nn.Linear(w, cfg.mlp_ratio * w)
        self.fc2 = nn.Linear(cfg.mlp_ratio * w, w)
        self.slot_proj: Optional[nn.Sequential] = None
        self.slot_head: Optional[nn.Sequential] = None
        if cfg.slot_mode == "position":
            self.slot_proj = nn.Sequential(nn.LayerNorm(w + DEPTH_EMBED), nn.Linear(w + DEPTH_EMBED, w), nn.GELU())
        elif cfg.slot_mode == "predict":
            self.slot_head = nn.Sequential(nn.LayerNorm(w), nn.Linear(w, cfg.depth))

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        b, t, w = h.shape
        q, k, v = self.qkv(h).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        # explicit softmax attention: with 17 tokens it is several times faster on CPU than the fused kernel
        att = torch.softmax((q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5), dim=-1)
        out = att @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, w))

    def mlp(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(h)))

    def forward(self, h: torch.Tensor, slot: int, mlp_first: bool = False,
                depth_row: Optional[torch.Tensor] = None, without: str = "") -> torch.Tensor:
        """`without` = "attn" or "mlp" deletes that sub-layer (its residual branch); "" runs both."""
        if self.slot_proj is not None:
            if depth_row is None:
                raise ValueError("a 'position' block needs the depth embedding of its slot (run it through the ViT)")
            e = depth_row.expand(*h.shape[:-1], depth_row.shape[-1])
            h = h + self.slot_proj(torch.cat([h, e], dim=-1))
        if without == "attn":
            return h + self.mlp(self.ln2(h))
        if without == "mlp":
            return h + self.attention(self.ln1(h))
        if mlp_first:  # the other sub-layer order; each sub-layer keeps its own LayerNorm
            h = h + self.mlp(self.ln2(h))
            return h + self.attention(self.ln1(h))
        h = h + self.attention(self.ln1(h))
        return h + self.mlp(self.ln2(h))


class Head(nn.Module):
    """Final LayerNorm and the linear classifier on the CLS token."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(cfg.width)
        self.fc = nn.Linear(cfg.width, cfg.n_classes)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(h[:, 0]))


class ViT(RoutedModel):
    """The routed ViT; see the module docstring."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.stem = Stem(cfg)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.depth))
        self.head = Head(cfg)
        self.reset_parameters()

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        """Init: block and head weights N(0, 0.02^2), zero biases, unit LayerNorms; the stem scaled by `stem_scale`.

        The output projections of each block are scaled down by sqrt(2 * depth) (GPT-2), so a deep stream starts
        near the identity. The stem draws CLS token and positions N(0, s^2) and the patch projection
        N(0, s^2/fan_in), s = `stem_scale`. At s = 1 (the default) the stream starts at unit scale: with the usual
        0.02 there and plain Adam, LayerShuffle training sat at chance for 8 epochs while sequential training
        learned (measured: 19 % vs 94 % held-out after 8 shuffled epochs). But a unit-scale stream dwarfs what
        the blocks add, so even a sequentially trained model barely notices a new block order (68-71 % over
        random orders). The stem scale trades the two: smaller makes the sequential model depend on its order,
        larger lets LayerShuffle train; `lab.core.recipes` records the measurements behind the value it uses.
        The depth embedding stays zero (as in the official code). Takes a generator so one layer can be re-drawn alone.
        """
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("depth_embed") or name.endswith(".bias") or ".ln" in name or "norm." in name:
                    continue  # biases and LayerNorms are reset below; the depth embedding starts at zero
                std = 0.02
                if name.endswith(("proj.weight", "fc2.weight")) and name.startswith("blocks."):
                    std /= math.sqrt(2 * self.cfg.depth)
                elif name in ("stem.cls", "stem.pos"):
                    std = self.cfg.stem_scale
                elif name == "stem.proj.weight":
                    std = self.cfg.stem_scale / math.sqrt(p.shape[1])
                p.normal_(0.0, std, generator=generator)
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.fill_(1.0)
                    m.bias.zero_()
                elif isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.zero_()
            if self.stem.depth_embed is not None:
                self.stem.depth_embed.zero_()

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.stem(x)

    def _depth_row(self, slot: int) -> Optional[torch.Tensor]:
        table = self.stem.depth_embed
        return None if table is None else table[min(slot, table.shape[0] - 1)]

    def run_block(self, h: torch.Tensor, block: int, slot: int) -> torch.Tensor:
        return self.blocks[block](h, slot, depth_row=self._depth_row(slot))

    def readout(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(h)

    def run_variant(self, h: torch.Tensor, block: int, slot: int, variant: str) -> torch.Tensor:
        if variant == NO_ATTN:
            return self.blocks[block](h, slot, depth_row=self._depth_row(slot), without="attn")
        if variant == NO_MLP:
            return self.blocks[block](h, slot, depth_row=self._depth_row(slot), without="mlp")
        if variant != MLP_FIRST:
            return super().run_variant(h, block, slot, variant)
        return self.blocks[block](h, slot, mlp_first=True, depth_row=self._depth_row(slot))

    def slot_logits(self, h: torch.Tensor, block: int) -> torch.Tensor:
        """The predict head of `block` on its output `h`: logits over slots (mean token as input)."""
        head = self.blocks[block].slot_head
        if head is None:
            raise ValueError("this ViT has no slot-prediction heads (slot_mode is not 'predict')")
        return head(h.mean(dim=1))

    def loss(self, x: torch.Tensor, y: torch.Tensor, route: Optional[Route] = None) -> torch.Tensor:
        """Cross-entropy of the classes, plus (predict mode) the mean slot-prediction cross-entropy."""
        if self.cfg.slot_mode != "predict":
            return super().loss(x, y, route)
        r = self.check_route(route)
        logits, states = self.states(x, r)
        aux = logits.new_zeros(())
        for slot, b in enumerate(r):
            target = torch.full((x.shape[0],), min(slot, self.cfg.depth - 1), dtype=torch.long)
            aux = aux + F.cross_entropy(self.slot_logits(states[slot + 1], b), target)
        return F.cross_entropy(logits, y) + aux / max(len(r), 1)
