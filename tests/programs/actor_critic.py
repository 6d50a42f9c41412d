"""REINFORCE with a learned baseline (actor-critic), written as pytorch/examples' actor_critic.py
is, on a hand-written corridor environment instead of gym.

Its idioms: a two-headed policy (``F.softmax(self.action_head(x), dim=-1)`` and a value head);
``torch.from_numpy(state).float()``; ``Categorical(probs)``, ``m.sample()``, ``m.log_prob(action)``
and ``m.entropy()``; ``action.item()``; a namedtuple of saved actions; discounted returns built
backwards with ``returns.insert(0, R)``, turned into a tensor and normalised with
``(returns - returns.mean()) / (returns.std() + eps)`` where ``eps = np.finfo(np.float32).eps.item()``;
``F.smooth_l1_loss(value, torch.tensor([R]))``; ``torch.stack(policy_losses).sum() +
torch.stack(value_losses).sum()``; ``del model.rewards[:]``; and a running reward."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from shim import F, distributions, nn, optim, torch

Categorical = distributions.Categorical
SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
GAMMA = 0.9
eps = np.finfo(np.float32).eps.item()


class Corridor:
    """Walk left or right on 5 cells; the right end pays 1 and ends the episode, each step costs 0.05."""

    def __init__(self, length=5, max_steps=6):
        self.length, self.max_steps = length, max_steps

    def reset(self):
        self.pos, self.t = 1, 0
        return self._obs()

    def _obs(self):
        obs = np.zeros(self.length + 1, dtype=np.float64)
        obs[self.pos] = 1.0
        obs[-1] = self.t / self.max_steps
        return obs

    def step(self, action):
        self.pos = max(0, min(self.length - 1, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == self.length - 1 or self.t >= self.max_steps
        reward = 1.0 if self.pos == self.length - 1 else -0.05
        return self._obs(), reward, done, {}


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(6, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


def build():
    torch.manual_seed(543)
    return Policy()


def select_action(model, state, entropies):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    entropies.append(m.entropy())
    return action.item()


def finish_episode(model, optimizer, entropies):
    R = 0
    saved_actions = model.saved_actions
    policy_losses, value_losses, returns = [], [], []
    for r in model.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum() - 0.01 * torch.stack(entropies).mean()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def train(model, steps=2):
    env = Corridor()
    optimizer = optim.Adam(model.parameters(), lr=3e-2)
    running_reward = 0.0
    record = {"losses": [], "lengths": [], "running_reward": []}
    for _ in range(steps):
        state, ep_reward, entropies = env.reset(), 0.0, []
        for t in range(1, 10):  # noqa: B007 (the episode length is read after the loop)
            action = select_action(model, state, entropies)
            state, reward, done, _ = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        record["losses"].append(finish_episode(model, optimizer, entropies))
        record["lengths"].append(t)
        record["running_reward"].append(running_reward)
    return record


if __name__ == "__main__":
    print(train(build()))
