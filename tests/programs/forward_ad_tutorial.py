"""The official tutorial "Forward-mode Automatic Differentiation", at a tiny size: `import
torch.autograd.forward_ad as fwAD`, a `with fwAD.dual_level():` block, `fwAD.make_dual(primal,
tangent)`, `fwAD.unpack_dual(...).tangent` (and `.primal`, and `None` for a tensor with no tangent and
after the level closes); tangents through an `nn.Module` by replacing its parameters with duals
(`delattr` then `setattr`) and through `torch.func.functional_call` with a dict of duals; a custom
`autograd.Function` with a `jvp` static method (its forward keeping `ctx.result`), checked by
`torch.autograd.gradcheck(..., check_forward_ad=True, check_backward_ad=False)`; and
`torch.func.jvp` for the same products. A few SGD steps on the module's loss use the tangent of a
parameter direction as the directional derivative."""

from __future__ import annotations

from shim import BACKEND, F, nn, torch

if BACKEND == "torch":
    import torch.autograd.forward_ad as fwAD
else:
    import vkml.autograd.forward_ad as fwAD

from_func = torch.func


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        # Tensors stored in ctx can be used in the subsequent forward grad computation.
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        # If the tensor stored in ctx will not also be used in the backward pass, one can manually free it
        del ctx.result
        return gO


def fn(x, y):
    return x**2 + y**2


def build():
    torch.manual_seed(0)
    return nn.Linear(5, 5)


def train(model, steps=3):
    primal = (torch.arange(10, dtype=torch.float32) * 0.3).sin().reshape(2, 5)
    tangent = (torch.arange(10, dtype=torch.float32) * 0.7).cos().reshape(2, 5)

    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        assert fwAD.unpack_dual(dual_input).tangent is tangent
        plain_tensor = torch.randn(10, 10)
        dual_output = fn(dual_input, plain_tensor[:2, :5] * 0)
        jvp = fwAD.unpack_dual(dual_output).tangent
        no_tangent = fwAD.unpack_dual(plain_tensor).tangent is None
    after_exit = fwAD.unpack_dual(dual_output).tangent is None

    # nn modules: parameters replaced by duals
    x = (torch.arange(10, dtype=torch.float32) * 0.11).cos().reshape(2, 5)
    params = {name: p for name, p in model.named_parameters()}
    tangents = {name: torch.ones_like(p) for name, p in params.items()}
    with fwAD.dual_level():
        for name, p in params.items():
            delattr(model, name)
            setattr(model, name, fwAD.make_dual(p, tangents[name]))
        out = model(x)
        module_jvp = fwAD.unpack_dual(out).tangent
    for name, p in params.items():
        delattr(model, name)
        model.register_parameter(name, p)

    # the same through functional_call
    with fwAD.dual_level():
        dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
        out = from_func.functional_call(model, dual_params, x)
        functional_jvp = fwAD.unpack_dual(out).tangent

    # a custom Function with jvp
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal.double(), tangent.double())
        dual_output = Fn.apply(dual_input)
        fn_jvp = fwAD.unpack_dual(dual_output).tangent
    # the tutorial checks the jvp against finite differences
    gradcheck_ok = torch.autograd.gradcheck(
        Fn.apply,
        (primal.double().requires_grad_(),),
        check_forward_ad=True,
        check_backward_ad=False,
        check_undefined_grad=False,
        check_batched_grad=False,
    )

    # torch.func.jvp gives the same products
    _, func_jvp = from_func.jvp(lambda p: fn(p, torch.zeros(2, 5)), (primal,), (tangent,))

    # directional derivatives of the loss along the all-ones direction, during a few SGD steps
    target = (torch.arange(10, dtype=torch.float32) * 0.5).sin().reshape(2, 5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, directional = [], []
    for _ in range(steps):
        with fwAD.dual_level():
            dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
            loss = F.mse_loss(from_func.functional_call(model, dual_params, x), target)
            directional.append(fwAD.unpack_dual(loss).tangent.item())
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {
        "losses": losses,
        "directional": directional,
        "jvp": jvp.flatten().tolist(),
        "no_tangent": no_tangent,
        "after_exit": after_exit,
        "module_jvp": module_jvp.flatten().tolist(),
        "functional_jvp": functional_jvp.flatten().tolist(),
        "fn_jvp": fn_jvp.flatten().tolist(),
        "gradcheck_ok": gradcheck_ok,
        "func_jvp": func_jvp.flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build()))
