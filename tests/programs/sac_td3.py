"""Soft actor-critic, TD3 and DDPG, written as CleanRL's sac_continuous_action.py and
td3_continuous_action.py and Spinning Up's ddpg.py are, on a hand-written pendulum with a numpy
replay buffer. ``ALGO`` picks the algorithm.

SAC's idioms: an actor with ``action_scale``/``action_bias`` buffers from ``torch.tensor(..., dtype=
torch.float32)``; ``log_std`` squashed by ``torch.tanh`` into ``[LOG_STD_MIN, LOG_STD_MAX]``;
``torch.distributions.Normal(mean, std).rsample()``, ``torch.tanh`` squashing with the log-prob
correction ``log_prob -= torch.log(self.action_scale * (1 - y_t.pow(2)) + 1e-6)`` and
``.sum(1, keepdim=True)``; twin Q networks on ``torch.cat([x, a], 1)`` with targets made by
``load_state_dict``; one Adam over ``list(qf1.parameters()) + list(qf2.parameters())``; the target
``torch.min(qf1_next_target, qf2_next_target) - alpha * next_state_log_pi`` under ``torch.no_grad()``;
automatic entropy tuning (``target_entropy = -torch.prod(torch.Tensor(shape)).item()``, a
``log_alpha = torch.zeros(1, requires_grad=True)`` leaf under its own Adam, ``alpha =
log_alpha.exp().item()``); polyak averaging by ``target_param.data.copy_(tau * param.data + (1 -
tau) * target_param.data)``.

TD3's: exploration by ``actions += torch.normal(0, actor.action_scale * exploration_noise)`` then
``.cpu().numpy().clip(low, high)``; target policy smoothing by ``(torch.randn_like(data.actions) *
policy_noise).clamp(-noise_clip, noise_clip) * target_actor.action_scale``; delayed actor updates
(``global_step % policy_frequency``); ``-qf1(obs, actor(obs)).mean()``; the targets updated by
``torch.no_grad()`` with ``p_targ.data.mul_(polyak)`` and ``p_targ.data.add_((1 - polyak) * p.data)``.

DDPG's (Spinning Up): ``copy.deepcopy`` targets frozen by ``p.requires_grad = False``, Q-network
parameters frozen by ``requires_grad_(False)`` during the policy step and thawed after, and the
target update by ``p_targ.lerp_(p, 1 - polyak)`` under ``torch.no_grad()``.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
from shim import F, nn, optim, torch

ALGO = "sac"  # or "td3", "ddpg"
DEVICE = "cpu"
LOG_STD_MAX = 2
LOG_STD_MIN = -5
HIDDEN = 16
BATCH_SIZE = 8
LEARNING_STARTS = 8
GAMMA = 0.99
TAU = 0.005
POLICY_FREQUENCY = 2
POLICY_NOISE = 0.2
NOISE_CLIP = 0.5
EXPLORATION_NOISE = 0.1


class Pendulum:
    """gym's Pendulum-v1: observation (cos, sin, angular velocity), torque in [-2, 2]."""

    low, high = np.array([-2.0], np.float32), np.array([2.0], np.float32)
    obs_dim, act_dim = 3, 1

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.th, self.thdot = self.rng.uniform(-np.pi, np.pi), self.rng.uniform(-1, 1)

    def obs(self):
        return np.array([np.cos(self.th), np.sin(self.th), self.thdot], np.float32)

    def step(self, u):
        u = float(np.clip(u, -2.0, 2.0)[0])
        angle = ((self.th + np.pi) % (2 * np.pi)) - np.pi
        cost = angle**2 + 0.1 * self.thdot**2 + 0.001 * u**2
        self.thdot = np.clip(self.thdot + (3 * 10.0 / 2 * np.sin(self.th) + 3.0 * u) * 0.05, -8, 8)
        self.th = self.th + self.thdot * 0.05
        return self.obs(), -cost, False


class ReplayBuffer:
    def __init__(self, size, obs_dim, act_dim, seed=0):
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.actions = np.zeros((size, act_dim), np.float32)
        self.rewards = np.zeros((size, 1), np.float32)
        self.dones = np.zeros((size, 1), np.float32)
        self.ptr, self.size, self.max_size = 0, 0, size
        self.rng = np.random.RandomState(seed)

    def add(self, obs, next_obs, action, reward, done):
        self.obs[self.ptr], self.next_obs[self.ptr], self.actions[self.ptr] = obs, next_obs, action
        self.rewards[self.ptr], self.dones[self.ptr] = reward, done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size, device):
        idxs = self.rng.randint(0, self.size, size=batch_size)
        as_tensor = lambda x: torch.as_tensor(x[idxs], device=device)  # noqa: E731
        return SimpleNamespace(
            observations=as_tensor(self.obs),
            next_observations=as_tensor(self.next_obs),
            actions=as_tensor(self.actions),
            rewards=as_tensor(self.rewards),
            dones=as_tensor(self.dones),
        )


class SoftQNetwork(nn.Module):
    def __init__(self, env):
        super().__init__()
        self.fc1 = nn.Linear(env.obs_dim + env.act_dim, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, 1)

    def forward(self, x, a):
        x = torch.cat([x, a], 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class Actor(nn.Module):
    """SAC's Gaussian actor (``get_action``), or TD3's deterministic one (``forward``)."""

    def __init__(self, env, stochastic):
        super().__init__()
        self.stochastic = stochastic
        self.fc1 = nn.Linear(env.obs_dim, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc_mean = nn.Linear(HIDDEN, env.act_dim)
        if stochastic:
            self.fc_logstd = nn.Linear(HIDDEN, env.act_dim)
        # action rescaling
        self.register_buffer("action_scale", torch.tensor((env.high - env.low) / 2.0, dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((env.high + env.low) / 2.0, dtype=torch.float32))

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        if not self.stochastic:
            x = torch.tanh(self.fc_mean(x))
            return x * self.action_scale + self.action_bias
        mean = self.fc_mean(x)
        log_std = self.fc_logstd(x)
        log_std = torch.tanh(log_std)
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)  # From SpinUp / Denis Yarats
        return mean, log_std

    def get_action(self, x):
        mean, log_std = self(x)
        std = log_std.exp()
        normal = torch.distributions.Normal(mean, std)
        x_t = normal.rsample()  # for reparameterization trick (mean + std * N(0,1))
        y_t = torch.tanh(x_t)
        action = y_t * self.action_scale + self.action_bias
        log_prob = normal.log_prob(x_t)
        # Enforcing Action Bound
        log_prob -= torch.log(self.action_scale * (1 - y_t.pow(2)) + 1e-6)
        log_prob = log_prob.sum(1, keepdim=True)
        mean = torch.tanh(mean) * self.action_scale + self.action_bias
        return action, log_prob, mean


class Agents(nn.Module):
    """The actor and the twin critics, for one state_dict."""

    def __init__(self, env):
        super().__init__()
        self.actor = Actor(env, stochastic=ALGO == "sac")
        self.qf1 = SoftQNetwork(env)
        self.qf2 = SoftQNetwork(env)


def build():
    torch.manual_seed(1)
    return Agents(Pendulum)


def _train_sac(agents, steps, device, env, rb):
    actor, qf1, qf2 = agents.actor, agents.qf1, agents.qf2
    qf1_target, qf2_target = SoftQNetwork(env).to(device), SoftQNetwork(env).to(device)
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=1e-3)
    actor_optimizer = optim.Adam(list(actor.parameters()), lr=3e-4)
    # Automatic entropy tuning
    target_entropy = -torch.prod(torch.Tensor((env.act_dim,)).to(device)).item()
    log_alpha = torch.zeros(1, requires_grad=True, device=device)
    alpha = log_alpha.exp().item()
    a_optimizer = optim.Adam([log_alpha], lr=1e-3)

    record = {"losses": [], "qf1_values": [], "actor_loss": [], "alpha": [], "rollout": []}
    obs = env.obs()
    for global_step in range(LEARNING_STARTS + steps):
        if global_step < LEARNING_STARTS:
            actions = np.array([np.sin(global_step) * 2.0], np.float32)
        else:
            actions, _, _ = actor.get_action(torch.Tensor(obs).to(device).unsqueeze(0))
            actions = actions.detach().cpu().numpy()[0]
            record["rollout"].append(float(actions[0]))
        next_obs, reward, done = env.step(actions)
        rb.add(obs, next_obs, actions, reward, done)
        obs = next_obs
        if global_step < LEARNING_STARTS:
            continue
        data = rb.sample(BATCH_SIZE, device)
        with torch.no_grad():
            next_state_actions, next_state_log_pi, _ = actor.get_action(data.next_observations)
            qf1_next_target = qf1_target(data.next_observations, next_state_actions)
            qf2_next_target = qf2_target(data.next_observations, next_state_actions)
            min_qf_next_target = torch.min(qf1_next_target, qf2_next_target) - alpha * next_state_log_pi
            next_q_value = data.rewards.flatten() + (1 - data.dones.flatten()) * GAMMA * (min_qf_next_target).view(-1)

        qf1_a_values = qf1(data.observations, data.actions).view(-1)
        qf2_a_values = qf2(data.observations, data.actions).view(-1)
        qf1_loss = F.mse_loss(qf1_a_values, next_q_value)
        qf2_loss = F.mse_loss(qf2_a_values, next_q_value)
        qf_loss = qf1_loss + qf2_loss

        # optimize the model
        q_optimizer.zero_grad()
        qf_loss.backward()
        q_optimizer.step()

        if global_step % POLICY_FREQUENCY == 0:  # TD 3 Delayed update support
            for _ in range(POLICY_FREQUENCY):  # compensate for the delay by doing 'actor_update_interval' instead of 1
                pi, log_pi, _ = actor.get_action(data.observations)
                qf1_pi = qf1(data.observations, pi)
                qf2_pi = qf2(data.observations, pi)
                min_qf_pi = torch.min(qf1_pi, qf2_pi)
                actor_loss = ((alpha * log_pi) - min_qf_pi).mean()

                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()

                with torch.no_grad():
                    _, log_pi, _ = actor.get_action(data.observations)
                alpha_loss = (-log_alpha.exp() * (log_pi + target_entropy)).mean()

                a_optimizer.zero_grad()
                alpha_loss.backward()
                a_optimizer.step()
                alpha = log_alpha.exp().item()
            record["actor_loss"].append(actor_loss.item())

        # update the target networks
        for param, target_param in zip(qf1.parameters(), qf1_target.parameters()):
            target_param.data.copy_(TAU * param.data + (1 - TAU) * target_param.data)
        for param, target_param in zip(qf2.parameters(), qf2_target.parameters()):
            target_param.data.copy_(TAU * param.data + (1 - TAU) * target_param.data)

        record["losses"].append(qf_loss.item())
        record["qf1_values"].append(qf1_a_values.mean().item())
        record["alpha"].append(alpha)
    record["target"] = [p.sum().item() for p in qf1_target.parameters()]
    return record


def _train_td3(agents, steps, device, env, rb):
    actor, qf1, qf2 = agents.actor, agents.qf1, agents.qf2
    target_actor = Actor(env, stochastic=False).to(device)
    qf1_target, qf2_target = SoftQNetwork(env).to(device), SoftQNetwork(env).to(device)
    target_actor.load_state_dict(actor.state_dict())
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=1e-3)
    actor_optimizer = optim.Adam(list(actor.parameters()), lr=1e-3)
    polyak = 1 - TAU

    record = {"losses": [], "qf1_values": [], "actor_loss": [], "rollout": []}
    obs = env.obs()
    for global_step in range(LEARNING_STARTS + steps):
        if global_step < LEARNING_STARTS:
            actions = np.array([np.cos(global_step) * 2.0], np.float32)
        else:
            with torch.no_grad():
                actions = actor(torch.Tensor(obs).to(device))
                actions += torch.normal(0, actor.action_scale * EXPLORATION_NOISE)
                actions = actions.cpu().numpy().clip(env.low, env.high)
            record["rollout"].append(float(actions[0]))
        next_obs, reward, done = env.step(actions)
        rb.add(obs, next_obs, actions, reward, done)
        obs = next_obs
        if global_step < LEARNING_STARTS:
            continue
        data = rb.sample(BATCH_SIZE, device)
        with torch.no_grad():
            clipped_noise = (torch.randn_like(data.actions, device=device) * POLICY_NOISE).clamp(
                -NOISE_CLIP, NOISE_CLIP
            ) * target_actor.action_scale

            next_state_actions = (target_actor(data.next_observations) + clipped_noise).clamp(env.low[0], env.high[0])
            qf1_next_target = qf1_target(data.next_observations, next_state_actions)
            qf2_next_target = qf2_target(data.next_observations, next_state_actions)
            min_qf_next_target = torch.min(qf1_next_target, qf2_next_target)
            next_q_value = data.rewards.flatten() + (1 - data.dones.flatten()) * GAMMA * (min_qf_next_target).view(-1)

        qf1_a_values = qf1(data.observations, data.actions).view(-1)
        qf2_a_values = qf2(data.observations, data.actions).view(-1)
        qf1_loss = F.mse_loss(qf1_a_values, next_q_value)
        qf2_loss = F.mse_loss(qf2_a_values, next_q_value)
        qf_loss = qf1_loss + qf2_loss

        # optimize the model
        q_optimizer.zero_grad()
        qf_loss.backward()
        q_optimizer.step()

        if global_step % POLICY_FREQUENCY == 0:
            actor_loss = -qf1(data.observations, actor(data.observations)).mean()
            actor_optimizer.zero_grad()
            actor_loss.backward()
            actor_optimizer.step()

            # update the target network
            with torch.no_grad():
                for p, p_targ in zip(actor.parameters(), target_actor.parameters()):
                    p_targ.data.mul_(polyak)
                    p_targ.data.add_((1 - polyak) * p.data)
                for p, p_targ in zip(qf1.parameters(), qf1_target.parameters()):
                    p_targ.data.mul_(polyak)
                    p_targ.data.add_((1 - polyak) * p.data)
                for p, p_targ in zip(qf2.parameters(), qf2_target.parameters()):
                    p_targ.data.mul_(polyak)
                    p_targ.data.add_((1 - polyak) * p.data)
            record["actor_loss"].append(actor_loss.item())

        record["losses"].append(qf_loss.item())
        record["qf1_values"].append(qf1_a_values.mean().item())
    record["target"] = [p.sum().item() for p in target_actor.parameters()]
    return record


def _train_ddpg(agents, steps, device, env, rb):
    ac = agents
    ac_targ = copy.deepcopy(ac)
    # Freeze target networks with respect to optimizers (only update via polyak averaging)
    for p in ac_targ.parameters():
        p.requires_grad = False
    pi_optimizer = optim.Adam(ac.actor.parameters(), lr=1e-3)
    q_optimizer = optim.Adam(ac.qf1.parameters(), lr=1e-3)
    polyak = 1 - TAU

    def compute_loss_q(data):
        q = ac.qf1(data.observations, data.actions).squeeze(-1)
        # Bellman backup for Q function
        with torch.no_grad():
            q_pi_targ = ac_targ.qf1(data.next_observations, ac_targ.actor(data.next_observations)).squeeze(-1)
            backup = data.rewards.squeeze(-1) + GAMMA * (1 - data.dones.squeeze(-1)) * q_pi_targ
        # MSE loss against Bellman backup
        loss_q = ((q - backup) ** 2).mean()
        return loss_q, q.detach().numpy()

    def compute_loss_pi(data):
        q_pi = ac.qf1(data.observations, ac.actor(data.observations))
        return -q_pi.mean()

    record = {"losses": [], "qf1_values": [], "actor_loss": [], "rollout": []}
    obs = env.obs()
    for global_step in range(LEARNING_STARTS + steps):
        if global_step < LEARNING_STARTS:
            actions = np.array([np.sin(0.5 * global_step) * 2.0], np.float32)
        else:
            with torch.no_grad():
                a = ac.actor(torch.as_tensor(obs, dtype=torch.float32)).numpy()
            a += EXPLORATION_NOISE * np.sin(global_step) * 2.0
            actions = np.clip(a, -2.0, 2.0)
            record["rollout"].append(float(actions[0]))
        next_obs, reward, done = env.step(actions)
        rb.add(obs, next_obs, actions, reward, done)
        obs = next_obs
        if global_step < LEARNING_STARTS:
            continue
        data = rb.sample(BATCH_SIZE, device)
        # First run one gradient descent step for Q.
        q_optimizer.zero_grad()
        loss_q, q_info = compute_loss_q(data)
        loss_q.backward()
        q_optimizer.step()

        # Freeze Q-network so you don't waste computational effort
        # computing gradients for it during the policy learning step.
        ac.qf1.requires_grad_(False)

        # Next run one gradient descent step for pi.
        pi_optimizer.zero_grad()
        loss_pi = compute_loss_pi(data)
        loss_pi.backward()
        pi_optimizer.step()

        # Unfreeze Q-network so you can optimize it at next DDPG step.
        ac.qf1.requires_grad_(True)

        # Finally, update target networks by polyak averaging.
        with torch.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                p_targ.lerp_(p, 1 - polyak)

        record["losses"].append(loss_q.item())
        record["qf1_values"].append(float(q_info.mean()))
        record["actor_loss"].append(loss_pi.item())
    record["target"] = [p.sum().item() for p in ac_targ.parameters()]
    record["qf2_grad_free"] = [p.grad is None for p in ac.qf2.parameters()]
    return record


def train(agents, steps=3):
    device = torch.device(DEVICE)
    agents = agents.to(device)
    torch.manual_seed(2)  # rsample's and the exploration's draws
    env = Pendulum()
    rb = ReplayBuffer(64, env.obs_dim, env.act_dim)
    return {"sac": _train_sac, "td3": _train_td3, "ddpg": _train_ddpg}[ALGO](agents, steps, device, env, rb)


if __name__ == "__main__":
    print(train(build()))
