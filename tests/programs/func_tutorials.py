"""The official torch.func tutorials, at tiny sizes: "Jacobians, Hessians, hvp, vhp, and more"
(`jacrev` with `argnums`, `jacfwd`, `vmap(jacrev(...))` over a batch, `hessian` and the
`jacfwd(jacrev(...))` composition, an hvp by `jvp(grad(...))`, `torch.autograd.functional.jacobian`
for comparison), "Model ensembling" (`stack_module_state` of a few MLPs, a `copy.deepcopy` as the
stateless base (the tutorial also moves it `to("meta")`: vkml has no meta device, so that call is left
out), `vmap(fmodel, in_dims=(0, 0, None))` over one minibatch and `in_dims=(0, 0, 0)` over one each), and
"Neural Tangent Kernels" (the empirical NTK by `vmap(jacrev(fnet_single))` over `functional_call` and
an `einsum` of the flattened Jacobians, with the trace, diagonal and full contractions). The last
step trains the ensemble's stacked parameters with plain SGD on their vmapped loss."""

from __future__ import annotations

import copy

from shim import F, nn, torch

func = torch.func


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        return self.fc2(x)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(2 * 2 * 2, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = x.flatten(1)
        return self.fc(x)


def build():
    torch.manual_seed(0)
    return nn.ModuleDict({"m0": MLP(), "m1": MLP(), "m2": MLP(), "net": ConvNet()})


def randn(*shape, seed):
    """Synthetic data the same in both libraries (their random generators differ), in place of the
    tutorials' torch.randn."""
    n = 1
    for size in shape:
        n *= size
    return (torch.arange(n, dtype=torch.float32) * 0.7 + seed).sin().mul(1.5).reshape(shape)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def _jacobians():
    D = 4
    weight = randn(D, D, seed=1)
    bias = randn(D, seed=2)
    x = randn(D, seed=3)
    jacobian = func.jacrev(predict, argnums=2)(weight, bias, x)
    ft_jacobian, ft_bias = func.jacrev(predict, argnums=(0, 1))(weight, bias, x)
    forward = func.jacfwd(predict, argnums=2)(weight, bias, x)
    reference = torch.autograd.functional.jacobian(lambda x_: predict(weight, bias, x_), x)
    batch = randn(3, D, seed=4)
    batched = func.vmap(func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, batch)
    batched_fwd = func.jacfwd(predict, argnums=2)(weight, bias, batch)
    hess0 = func.hessian(predict, argnums=2)(weight, bias, x)
    hess1 = func.jacfwd(func.jacrev(predict, argnums=2), argnums=2)(weight, bias, x)

    def f(x):
        return x.sin().sum()

    def hvp(f, primals, tangents):
        return func.jvp(func.grad(f), primals, tangents)[1]

    v = randn(D, seed=5)
    return {
        "jacobian": jacobian.flatten().tolist(),
        "ft_jacobian": ft_jacobian.flatten().tolist() + ft_bias.flatten().tolist(),
        "forward": forward.flatten().tolist(),
        "same_as_autograd": torch.allclose(reference, jacobian),
        "batched": list(batched.shape) + batched.flatten().tolist(),
        "batched_fwd": list(batched_fwd.shape) + batched_fwd.flatten().tolist(),
        "hessians": list(hess0.shape) + hess0.flatten().tolist() + hess1.flatten().tolist(),
        "hvp": hvp(f, (x,), (v,)).tolist(),
    }


def _ntk(net, x1, x2):
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return func.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute):
        jac1 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = jac1.values()
        jac1 = [j.flatten(2) for j in jac1]
        jac2 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = jac2.values()
        jac2 = [j.flatten(2) for j in jac2]
        einsum_expr = None
        if compute == "full":
            einsum_expr = "Naf,Mbf->NMab"
        elif compute == "trace":
            einsum_expr = "Naf,Maf->NM"
        elif compute == "diagonal":
            einsum_expr = "Naf,Maf->NMa"
        else:
            raise AssertionError(compute)
        result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
        return result.sum(0)

    def empirical_ntk_ntk_vps(func_, params, x1, x2, compute="full"):
        def get_ntk(x1, x2):
            def func_x1(params):
                return func_(params, x1)

            def func_x2(params):
                return func_(params, x2)

            output, vjp_fn = func.vjp(func_x1, params)

            def get_ntk_slice(vec):
                vjps = vjp_fn(vec)
                _, jvps = func.jvp(func_x2, (params,), vjps)
                return jvps

            basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
            return func.vmap(get_ntk_slice)(basis)

        result = func.vmap(func.vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
        if compute == "full":
            return result
        if compute == "trace":
            return torch.einsum("NMKK->NM", result)
        if compute == "diagonal":
            return torch.einsum("NMKK->NMK", result)

    full = empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, "full")
    trace = empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, "trace")
    diagonal = empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, "diagonal")
    by_vps = empirical_ntk_ntk_vps(fnet_single, params, x1, x2)
    return {
        "ntk_full": list(full.shape) + full.flatten().tolist(),
        "ntk_trace": trace.flatten().tolist(),
        "ntk_diagonal": diagonal.flatten().tolist(),
        "ntk_vps_close": torch.allclose(full, by_vps, atol=1e-5),
    }


def train(model, steps=3):
    result = _jacobians()

    num_models = 3
    minibatches = randn(num_models, 4, 6, seed=6)
    targets = torch.arange(num_models * 4).remainder(3).reshape(num_models, 4)
    models = [model[f"m{i}"] for i in range(num_models)]
    minibatch = minibatches[0]
    predictions2 = [m(minibatch) for m in models]
    params, buffers = func.stack_module_state(models)
    base_model = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return func.functional_call(base_model, (params, buffers), (x,))

    predictions1_vmap = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    same_minibatch = torch.allclose(predictions1_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
    predictions2_vmap = func.vmap(fmodel)(params, buffers, minibatches)
    expected = torch.stack([m(mb) for m, mb in zip(models, minibatches)])

    def compute_loss(params, buffers, x, y):
        return F.cross_entropy(fmodel(params, buffers, x), y)

    params = {k: v.detach() for k, v in params.items()}
    losses = []
    for _ in range(steps):
        loss = func.vmap(compute_loss)(params, buffers, minibatches, targets)
        grads = func.vmap(func.grad(compute_loss))(params, buffers, minibatches, targets)
        losses.append(loss.sum().item())
        params = {k: p - 0.5 * grads[k] for k, p in params.items()}

    x_train = randn(3, 1, 4, 4, seed=7)
    x_test = randn(2, 1, 4, 4, seed=8)
    result.update(_ntk(model["net"], x_train, x_test))
    result.update(
        {
            "losses": losses,
            "ensemble": predictions2_vmap.flatten().tolist(),
            "ensemble_close": same_minibatch and torch.allclose(predictions2_vmap, expected, atol=1e-6),
            "final": [p.sum().item() for p in params.values()],
        }
    )
    return result


if __name__ == "__main__":
    print(train(build()))
