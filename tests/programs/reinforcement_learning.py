"""pytorch/examples' reinforcement_learning (reinforce.py and actor_critic.py) at a tiny size, on a
hand-written cart-pole with gym's reset/step interface: torch.from_numpy(state).float().unsqueeze(0),
F.softmax(..., dim=-1) into torch.distributions.Categorical, m.sample(), m.log_prob(action),
m.entropy(), action.item(), discounted returns in a collections.deque put through torch.tensor and
normalised with (returns - returns.mean()) / (returns.std() + eps) where
eps = np.finfo(np.float32).eps.item(), torch.cat and torch.stack of per-step losses,
F.smooth_l1_loss(value, torch.tensor([R])), a SavedAction namedtuple, `del policy.rewards[:]`,
and the running reward of the examples' log lines."""

from __future__ import annotations

import math
from collections import deque, namedtuple

import numpy as np
from shim import F, nn, optim, torch
from shim import distributions as dist

Categorical = dist.Categorical
DROPOUT = 0.6
USE_CUDA = False  # the examples run on the CPU; a user moving them to a GPU sets this
GAMMA = 0.99
eps = np.finfo(np.float32).eps.item()
DEVICE = None  # set by train()
SavedAction = namedtuple("SavedAction", ["log_prob", "value"])


class CartPole:
    """The classic cart-pole (Barto, Sutton and Anderson), written out: reward 1 a step until the
    pole falls past 12 degrees or the cart leaves the track."""

    def __init__(self, max_steps=12):
        self.max_steps = max_steps
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.copy(), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array(
            [x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc]
        )
        self.t += 1
        terminated = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360)
        return self.state.copy(), 1.0, terminated, self.t >= self.max_steps, {}


class Policy(nn.Module):
    """reinforce.py's policy."""

    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 16)
        self.dropout = nn.Dropout(p=DROPOUT)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


class ActorCritic(nn.Module):
    """actor_critic.py's policy: one body, an action head and a value head."""

    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


class Agents(nn.Module):
    """Both examples' models in one module so the comparison can copy one state_dict."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()
        self.actor_critic = ActorCritic()


def reinforce_select_action(policy, state):
    state = torch.from_numpy(state).float().unsqueeze(0).to(policy.affine1.weight.device)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def reinforce_finish_episode(policy, optimizer):
    R = 0
    policy_loss = []
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.appendleft(R)
    returns = torch.tensor(returns, device=DEVICE)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


def actor_critic_select_action(model, state, entropies):
    state = torch.from_numpy(state).float().to(model.affine1.weight.device)
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    entropies.append(m.entropy())
    return action.item()


def actor_critic_finish_episode(model, optimizer, entropies):
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []  # list to save actor (policy) loss
    value_losses = []  # list to save critic (value) loss
    returns = []  # list to save the true values
    for r in model.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns, device=DEVICE)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R], device=DEVICE)))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum() - 0.01 * torch.stack(entropies).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    del entropies[:]
    return loss.item()


def build():
    torch.manual_seed(543)
    return Agents()


def train(model, steps=2):
    global DEVICE
    DEVICE = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    model.to(DEVICE)
    env = CartPole()
    losses, running_rewards = [], []
    policy = model.policy
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    running_reward = 10
    for i_episode in range(steps):
        state, _ = env.reset(seed=i_episode)
        ep_reward = 0
        for _t in range(1, 10000):  # Don't infinite loop while learning
            action = reinforce_select_action(policy, state)
            state, reward, done, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        losses.append(reinforce_finish_episode(policy, optimizer))
        running_rewards.append(running_reward)

    model = model.actor_critic
    optimizer = optim.Adam(model.parameters(), lr=3e-2)
    ac_losses, entropies = [], []
    for i_episode in range(steps):
        state, _ = env.reset(seed=10 + i_episode)
        ep_reward = 0
        for _t in range(1, 10000):
            action = actor_critic_select_action(model, state, entropies)
            state, reward, done, truncated, _ = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        ac_losses.append(actor_critic_finish_episode(model, optimizer, entropies))
        running_rewards.append(running_reward)
    return {"losses": losses, "actor_critic_losses": ac_losses, "running_rewards": running_rewards}


if __name__ == "__main__":
    print(train(build()))
