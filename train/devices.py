"""Where a run computes and in what precision: the ``device`` and ``precision`` config keys resolved for this machine
(one rank's device under torchrun: :func:`train.distributed.rank_device`)."""

from __future__ import annotations

import torch


def resolve_device(name: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without CUDA is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch sees no CUDA device: use device=auto or device=cpu")
    return torch.device(name)


def resolve_precision(name: str, device: torch.device) -> torch.dtype:
    """``float32`` or ``bfloat16`` as asked; ``auto`` -> bfloat16 where ``device`` multiplies it natively (a CUDA
    device with bfloat16, a CPU with AVX-512 BF16 or AMX), else float32."""
    if name == "auto":
        if device.type == "cuda":
            native = torch.cuda.is_bf16_supported()
        else:  # torch's own CPU feature checks (private; absent in some builds: then float32)
            names = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
            native = any(getattr(torch.cpu, name, None) is not None and getattr(torch.cpu, name)() for name in names)
        return torch.bfloat16 if native else torch.float32
    return torch.bfloat16 if name == "bfloat16" else torch.float32
