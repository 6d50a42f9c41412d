"""PPO with generalized advantage estimation, written as CleanRL's ppo.py is, on a hand-written
vectorised cart-pole instead of gym's ``SyncVectorEnv``.

Its idioms: ``layer_init`` by ``torch.nn.init.orthogonal_(layer.weight, std)`` and
``torch.nn.init.constant_(layer.bias, bias_const)`` with ``std=np.sqrt(2)``; an ``Agent`` with
``get_value`` and ``get_action_and_value`` over ``Categorical(logits=logits)`` (``sample``,
``log_prob``, ``entropy``); rollout storage preallocated by ``torch.zeros((num_steps, num_envs) +
obs_shape).to(device)`` and filled by ``obs[step] = next_obs``, ``values[step] = value.flatten()``,
``rewards[step] = torch.tensor(reward).to(device).view(-1)``; ``torch.Tensor(next_obs)``; the
learning rate annealed through ``optimizer.param_groups[0]["lr"] = lrnow``; GAE backwards in time
(``advantages[t] = lastgaelam = delta + ...``) under ``torch.no_grad()``; the batch flattened by
``reshape((-1,) + obs_shape)``; minibatches from ``torch.randperm``; ``logratio.exp()``, the
approximate KL and clip fractions under ``torch.no_grad()``; advantages normalised per minibatch;
the clipped surrogate by ``torch.max(pg_loss1, pg_loss2)``; value clipping; ``nn.utils.clip_grad_norm_``;
an early stop on ``target_kl``; and the explained variance in numpy.
"""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

Categorical = torch.distributions.Categorical
DEVICE = "cpu"
NUM_ENVS = 4
NUM_STEPS = 8
UPDATE_EPOCHS = 2
NUM_MINIBATCHES = 2
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP_COEF = 0.2
ENT_COEF = 0.01
VF_COEF = 0.5
MAX_GRAD_NORM = 0.5
TARGET_KL = 0.5
NORM_ADV = True
CLIP_VLOSS = True
LEARNING_RATE = 2.5e-3


class CartPoles:
    """``n`` cart-poles stepped together (gym's CartPole-v1 dynamics, Euler steps), reset on failure."""

    def __init__(self, n, seed=1):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, (n, 4))

    def reset(self):
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(action == 1, 10.0, -10.0)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta**2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        self.state = np.stack(
            [x + 0.02 * x_dot, x_dot + 0.02 * xacc, theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc], 1
        )
        done = (np.abs(self.state[:, 0]) > 2.4) | (np.abs(self.state[:, 2]) > 0.21)
        reward = np.ones(self.n, dtype=np.float32)
        self.state[done] = self.rng.uniform(-0.05, 0.05, (int(done.sum()), 4))
        return self.state.astype(np.float32), reward, done.astype(np.float32)


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):  # noqa: B008 (as CleanRL writes it)
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim=4, n_actions=2, hidden=16):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def build():
    torch.manual_seed(1)
    return Agent()


def train(agent, steps=2):
    device = torch.device(DEVICE)
    agent = agent.to(device)
    torch.manual_seed(1)  # the rollouts' actions and the minibatch permutations
    envs = CartPoles(NUM_ENVS)
    obs_shape = (4,)
    batch_size = NUM_ENVS * NUM_STEPS
    minibatch_size = batch_size // NUM_MINIBATCHES
    optimizer = optim.Adam(agent.parameters(), lr=LEARNING_RATE, eps=1e-5)

    obs = torch.zeros((NUM_STEPS, NUM_ENVS) + obs_shape).to(device)
    actions = torch.zeros((NUM_STEPS, NUM_ENVS)).to(device)
    logprobs = torch.zeros((NUM_STEPS, NUM_ENVS)).to(device)
    rewards = torch.zeros((NUM_STEPS, NUM_ENVS)).to(device)
    dones = torch.zeros((NUM_STEPS, NUM_ENVS)).to(device)
    values = torch.zeros((NUM_STEPS, NUM_ENVS)).to(device)

    next_obs = torch.Tensor(envs.reset()).to(device)
    next_done = torch.zeros(NUM_ENVS).to(device)
    record = {"losses": [], "pg_loss": [], "v_loss": [], "entropy": [], "approx_kl": [], "clipfrac": []}
    record["explained_var"] = []
    for iteration in range(1, steps + 1):
        frac = 1.0 - (iteration - 1.0) / steps
        lrnow = frac * LEARNING_RATE
        optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, NUM_STEPS):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, next_done = envs.step(action.cpu().numpy())
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(next_done).to(device)

        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(NUM_STEPS)):
                if t == NUM_STEPS - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + GAMMA * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + GAMMA * GAE_LAMBDA * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1,) + obs_shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        clipfracs = []
        for _epoch in range(UPDATE_EPOCHS):
            b_inds = torch.randperm(batch_size, device=device)
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > CLIP_COEF).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if NORM_ADV:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                # Policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - CLIP_COEF, 1 + CLIP_COEF)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # Value loss
                newvalue = newvalue.view(-1)
                if CLIP_VLOSS:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds],
                        -CLIP_COEF,
                        CLIP_COEF,
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - ENT_COEF * entropy_loss + v_loss * VF_COEF

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD_NORM)
                optimizer.step()

            if TARGET_KL is not None and approx_kl > TARGET_KL:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        record["losses"].append(loss.item())
        record["pg_loss"].append(pg_loss.item())
        record["v_loss"].append(v_loss.item())
        record["entropy"].append(entropy_loss.item())
        record["approx_kl"].append(approx_kl.item())
        record["clipfrac"].append(float(np.mean(clipfracs)))
        record["explained_var"].append(float(explained_var))
    record["actions"] = actions.flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
