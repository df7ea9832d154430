# ----------------------------------------------------------------------------- CUDA extension packages
# (envsolve adds this part to smoke_test.py for an environment whose lock names CUDA extension
# packages: flash-attn, xformers, bitsandbytes, ...; it runs their checks after the frameworks')

# what each CUDA extension package of the lock is imported as
_EXTENSION_MODULES = {"flash-attn": "flash_attn", "flash-attn-3": "flash_attn_interface", "xformers": "xformers",
                      "vllm": "vllm", "bitsandbytes": "bitsandbytes", "triton": "triton", "deepspeed": "deepspeed",
                      "mamba-ssm": "mamba_ssm", "causal-conv1d": "causal_conv1d", "torch-scatter": "torch_scatter",
                      "torch-sparse": "torch_sparse", "pyg-lib": "pyg_lib", "apex": "apex", "tensorrt": "tensorrt"}


def _qkv(torch: Any) -> tuple[Any, Any, Any]:
    """Small half-precision attention inputs on the GPU: batch 1, 128 tokens, 4 heads of 64."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    return tuple(torch.randn(1, 128, 4, 64, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))


def _sdpa(torch: Any, q: Any, k: Any, v: Any) -> Any:
    """PyTorch's own attention of (batch, tokens, heads, dim) inputs: the reference."""
    t = [x.transpose(1, 2) for x in (q, k, v)]
    return torch.nn.functional.scaled_dot_product_attention(*t).transpose(1, 2)


def _close(torch: Any, got: Any, want: Any, what: str) -> str:
    err = float((got.float() - want.float()).abs().max())
    if err > 2e-2:
        raise AssertionError(f"{what} differs from PyTorch's by {err:.3g}")
    return f"{what} matches PyTorch's (max error {err:.2g})"


def _flash_attn(mod: Any) -> str:
    import torch

    q, k, v = _qkv(torch)
    return _close(torch, mod.flash_attn_func(q, k, v), _sdpa(torch, q, k, v), "flash_attn_func on 1x128x4x64 fp16")


def _flash_attn_3(mod: Any) -> str:
    import torch

    q, k, v = _qkv(torch)
    got = mod.flash_attn_func(q, k, v)
    got = got[0] if isinstance(got, tuple) else got  # 3.0 betas return (out, softmax_lse)
    return _close(torch, got, _sdpa(torch, q, k, v), "FlashAttention-3 flash_attn_func on 1x128x4x64 fp16")


def _xformers(mod: Any) -> str:
    import torch
    import xformers.ops

    q, k, v = _qkv(torch)
    got = xformers.ops.memory_efficient_attention(q, k, v)
    return _close(torch, got, _sdpa(torch, q, k, v), "memory_efficient_attention on 1x128x4x64 fp16")


def _bitsandbytes(mod: Any) -> str:
    import torch

    torch.manual_seed(0)
    dense = torch.nn.Linear(64, 64, bias=False).half()
    int8 = mod.nn.Linear8bitLt(64, 64, bias=False, has_fp16_weights=False, threshold=0.0)
    int8.load_state_dict(dense.state_dict())
    int8 = int8.to("cuda")  # quantizes the weight to int8
    x = torch.randn(16, 64, dtype=torch.float16, device="cuda")
    want = dense.to("cuda")(x)
    err = float((int8(x).float() - want.float()).abs().max() / want.float().abs().max())
    if err > 0.1:
        raise AssertionError(f"the 8-bit matmul differs from the fp16 one by {err:.1%}")
    return f"an 8-bit matmul (Linear8bitLt, 16x64 @ 64x64) matches fp16 within {err:.1%}"


def _triton(mod: Any) -> str:
    """A Triton kernel compiled for this GPU (Triton's JIT: its compiler, ptxas and a C compiler for
    the launcher) adding two vectors, against PyTorch's sum."""
    import torch

    globals()["tl"] = mod.language  # the kernel's body looks its names up in this module

    @mod.jit
    def add(x, y, out, n, block: tl.constexpr):  # noqa: F821 (tl is set above)
        i = tl.program_id(0) * block + tl.arange(0, block)  # noqa: F821
        keep = i < n
        tl.store(out + i, tl.load(x + i, mask=keep) + tl.load(y + i, mask=keep), mask=keep)  # noqa: F821

    x, y = (torch.randn(4096, device="cuda") for _ in range(2))
    out = torch.empty_like(x)
    add[(4,)](x, y, out, 4096, block=1024)
    err = float((out - (x + y)).abs().max())
    if err > 1e-6:
        raise AssertionError(f"a Triton vector add differs from PyTorch's by {err:.3g}")
    return f"a Triton kernel (vector add, 4096 fp32) compiled for this GPU matches PyTorch's (max error {err:.2g})"


# the one small GPU operation of a package (the others are imported only)
_EXTENSION_OPS = {"flash-attn": _flash_attn, "flash-attn-3": _flash_attn_3, "xformers": _xformers,
                  "bitsandbytes": _bitsandbytes, "triton": _triton}


def _extension_version(r: Report, x: dict[str, Any]) -> None:
    try:
        installed = md.version(x["name"])
    except md.PackageNotFoundError:
        installed = ""
    base, _ = _base_and_local(installed) if installed else ("", "")
    if base == x["version"]:
        r.ok(f"{x['name']} version", f"{installed} ({x['install']})")
    else:
        r.fail(f"{x['name']} version", f"{installed or 'nothing'} installed, the lock says {x['version']}")


def check_extensions(r: Report, on_gpu: bool) -> None:
    """Each CUDA extension package of the lock: its version, its import, and its one small GPU
    operation where it has one (said as skipped, and why, when no GPU is in use)."""
    for x in EXPECTED.get("extensions", []):
        name = x["name"]
        _extension_version(r, x)
        mod = _module(_EXTENSION_MODULES.get(name, name.replace("-", "_")))
        if mod is None:
            r.fail(f"{name} import", f"{_EXTENSION_MODULES.get(name, name)} cannot be imported")
            continue
        op = _EXTENSION_OPS.get(name)
        if op is None:
            r.ok(f"{name} import", "imported (no GPU operation is checked for it)")
        elif not on_gpu:
            r.skip(f"{name} on the GPU", f"imported; its GPU operation ({op.__name__.strip('_')}) was not run: "
                                         "no GPU is in use (it needs CUDA)")
        else:
            _run_op(r, name, op, mod)


def _run_op(r: Report, name: str, op: Any, mod: Any) -> None:
    try:
        r.ok(f"{name} on the GPU", op(mod))
    except Exception as e:  # the kernel's own error says which arch or build is missing
        r.fail(f"{name} on the GPU", f"{type(e).__name__}: {e}")


_run_frameworks = run


def run(allow_cpu: bool) -> Report:  # noqa: F811 (the frameworks' checks, then the extension packages')
    r = _run_frameworks(allow_cpu)
    on_gpu = EXPECTED["accelerator"] == "cuda" and "torch" in gpu_frameworks()
    check_extensions(r, on_gpu)
    return r


