"""A tiny NeRF fitted to a few rays of a synthetic scene, written the way the popular PyTorch NeRF port
writes its embedder, MLP, volume rendering and hierarchical sampling.

Its idioms: positional encoding by a list of ``lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq)`` over
``2.0 ** torch.linspace(0.0, max_freq, steps=N_freqs)`` and ``[torch.sin, torch.cos]``, joined by
``torch.cat([fn(inputs) for fn in self.embed_fns], -1)``; an MLP over ``nn.ModuleList`` with a skip
``torch.cat([input_pts, h], -1)`` and a view-direction branch split off by
``torch.split(x, [input_ch, input_ch_views], dim=-1)``; rays from ``torch.meshgrid(torch.linspace(...),
torch.linspace(...), indexing="ij")``, ``i.t()``, ``dirs[..., np.newaxis, :] * c2w[:3, :3]`` and
``c2w[:3, -1].expand(rays_d.shape)``; stratified samples ``lower + (upper - lower) * torch.rand(z_vals.shape)``;
volume rendering (``dists`` closed by ``torch.Tensor([1e10]).expand(dists[..., :1].shape)``,
``raw2alpha = lambda raw, dists, act_fn=F.relu: 1.0 - torch.exp(-act_fn(raw) * dists)``, transmittance
``torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]``,
``disp_map = 1.0 / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))``);
hierarchical sampling by inverse transform (``torch.cumsum`` of the pdf, ``torch.searchsorted(cdf, u,
right=True)``, ``torch.max``/``torch.min`` against ``zeros_like``/``ones_like`` bounds, ``torch.gather`` of
``cdf.unsqueeze(1).expand(matched_shape)``, ``torch.where(denom < 1e-5, ...)``) with ``det`` samples
from ``torch.linspace`` or random ones from ``torch.rand``; ``torch.sort`` of the merged samples; the
``img2mse``/``mse2psnr`` lambdas with ``torch.log(torch.Tensor([10.0]))``; the exponential learning
rate decay written into ``param_group["lr"]``; and ``with torch.device(...)`` as the default device of
every tensor the renderer creates."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
PERTURB = 1.0
N_SAMPLES, N_IMPORTANCE, MULTIRES, MULTIRES_VIEWS, WIDTH, H, W = 6, 6, 4, 2, 16, 3, 4


class Embedder:
    def __init__(self, input_dims, max_freq_log2, num_freqs, include_input=True, log_sampling=True):
        embed_fns = []
        out_dim = 0
        if include_input:
            embed_fns.append(lambda x: x)
            out_dim += input_dims
        if log_sampling:
            freq_bands = 2.0 ** torch.linspace(0.0, max_freq_log2, steps=num_freqs)
        else:
            freq_bands = torch.linspace(2.0**0.0, 2.0**max_freq_log2, steps=num_freqs)
        for freq in freq_bands:
            for p_fn in [torch.sin, torch.cos]:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += input_dims
        self.embed_fns = embed_fns
        self.out_dim = out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


def get_embedder(multires):
    embedder_obj = Embedder(3, multires - 1, multires)
    return (lambda x, eo=embedder_obj: eo.embed(x)), embedder_obj.out_dim


class NeRF(nn.Module):
    def __init__(self, D=4, W=WIDTH, input_ch=3, input_ch_views=3, output_ch=4, skips=(2,), use_viewdirs=True):
        super().__init__()
        self.D, self.W, self.input_ch, self.input_ch_views = D, W, input_ch, input_ch_views
        self.skips, self.use_viewdirs = list(skips), use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W) for i in range(D - 1)]
        )
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, _ in enumerate(self.pts_linears):
            h = self.pts_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        if self.use_viewdirs:
            alpha = self.alpha_linear(h)
            feature = self.feature_linear(h)
            h = torch.cat([feature, input_views], -1)
            for i, _ in enumerate(self.views_linears):
                h = self.views_linears[i](h)
                h = F.relu(h)
            rgb = self.rgb_linear(h)
            return torch.cat([rgb, alpha], -1)
        return self.output_linear(h)


class NeRFPair(nn.Module):
    def __init__(self):
        super().__init__()
        _, input_ch = get_embedder(MULTIRES)
        _, input_ch_views = get_embedder(MULTIRES_VIEWS)
        self.coarse = NeRF(input_ch=input_ch, input_ch_views=input_ch_views)
        self.fine = NeRF(input_ch=input_ch, input_ch_views=input_ch_views)


def get_rays(H, W, K, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H), indexing="ij")
    i = i.t()
    j = j.t()
    dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1], -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def raw2outputs(raw, z_vals, rays_d):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1.0 - torch.exp(-act_fn(raw) * dists)  # noqa: E731
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    alpha = raw2alpha(raw[..., 3], dists)
    weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1.0 / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)
    return rgb_map, disp_map, acc_map, weights, depth_map


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0.0, 1.0, steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


def render_rays(model, rays_o, rays_d, viewdirs, near, far, embed_fn, embeddirs_fn, perturb, det):
    N_rays = rays_o.shape[0]
    t_vals = torch.linspace(0.0, 1.0, steps=N_SAMPLES)
    z_vals = near * (1.0 - t_vals) + far * t_vals
    z_vals = z_vals.expand([N_rays, N_SAMPLES])
    if perturb > 0.0:
        mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        t_rand = torch.rand(z_vals.shape)
        z_vals = lower + (upper - lower) * t_rand

    def run(network, z_vals):
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        inputs_flat = torch.reshape(pts, [-1, pts.shape[-1]])
        embedded = embed_fn(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape)
        input_dirs_flat = torch.reshape(input_dirs, [-1, input_dirs.shape[-1]])
        embedded = torch.cat([embedded, embeddirs_fn(input_dirs_flat)], -1)
        outputs = network(embedded)
        return torch.reshape(outputs, list(pts.shape[:-1]) + [outputs.shape[-1]])

    raw = run(model.coarse, z_vals)
    rgb_map_0, disp_map_0, acc_map_0, weights, _ = raw2outputs(raw, z_vals, rays_d)
    z_vals_mid = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_IMPORTANCE, det=det)
    z_samples = z_samples.detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    raw = run(model.fine, z_vals)
    rgb_map, disp_map, acc_map, _, depth_map = raw2outputs(raw, z_vals, rays_d)
    return {"rgb_map": rgb_map, "disp_map": disp_map, "acc_map": acc_map, "rgb0": rgb_map_0, "depth_map": depth_map}


def make_scene():
    """A camera looking down -z at a coloured gradient: the target colour of each ray is known."""
    c2w = torch.tensor([[1.0, 0.0, 0.0, 0.1], [0.0, 1.0, 0.0, -0.2], [0.0, 0.0, 1.0, 2.0]])
    focal = 2.0
    K = np.array([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
    rays_o, rays_d = get_rays(H, W, K, c2w)
    xs = np.linspace(0, 1, W, dtype=np.float32)
    ys = np.linspace(0, 1, H, dtype=np.float32)
    target = np.stack([*np.meshgrid(xs, ys), 0.5 * np.ones((H, W), np.float32)], -1)
    return rays_o.reshape(-1, 3), rays_d.reshape(-1, 3), torch.tensor(target.reshape(-1, 3), dtype=torch.float32)


def build():
    torch.manual_seed(0)
    return NeRFPair()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    with device:  # every tensor the renderer creates (ones, linspace, rand, Tensor) lands on the device
        return _train(model, steps)


def _train(model, steps):
    embed_fn, _ = get_embedder(MULTIRES)
    embeddirs_fn, _ = get_embedder(MULTIRES_VIEWS)
    img2mse = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
    mse2psnr = lambda x: -10.0 * torch.log(x) / torch.log(torch.Tensor([10.0]))  # noqa: E731
    lrate, lrate_decay, decay_rate = 5e-3, 1, 0.1
    optimizer = optim.Adam(params=model.parameters(), lr=lrate, betas=(0.9, 0.999))
    rays_o, rays_d, target = make_scene()
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    losses, psnrs, lrs = [], [], []
    for global_step in range(steps):
        out = render_rays(
            model, rays_o, rays_d, viewdirs, 1.0, 3.0, embed_fn, embeddirs_fn, PERTURB, det=PERTURB == 0.0
        )
        optimizer.zero_grad()
        img_loss = img2mse(out["rgb_map"], target)
        loss = img_loss + img2mse(out["rgb0"], target)
        psnr = mse2psnr(img_loss)
        loss.backward()
        optimizer.step()
        decay_steps = lrate_decay * 1000
        new_lrate = lrate * (decay_rate ** ((global_step + 1) / decay_steps))
        for param_group in optimizer.param_groups:
            param_group["lr"] = new_lrate
        losses.append(loss.item())
        psnrs.append(psnr.item())
        lrs.append(new_lrate)
    with torch.no_grad():
        out = render_rays(model, rays_o, rays_d, viewdirs, 1.0, 3.0, embed_fn, embeddirs_fn, 0.0, det=True)
    return {
        "losses": losses,
        "psnr": psnrs,
        "lrs": lrs,
        "disp": out["disp_map"].tolist(),
        "acc": out["acc_map"].tolist(),
        "depth": out["depth_map"].tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
