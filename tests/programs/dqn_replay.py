"""Deep Q-learning with a replay memory and a target network, as the PyTorch DQN tutorial writes it, on
a hand-written grid walk standing in for gym.

Its idioms: ``Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))`` kept
in a ``deque(maxlen=...)`` and sampled in a fixed order here; ``batch = Transition(*zip(*transitions))``;
``non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)``
and ``torch.cat([s for s in batch.next_state if s is not None])``; ``policy_net(state_batch).gather(1,
action_batch)``; ``next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values``
under ``torch.no_grad()``; ``nn.SmoothL1Loss`` on ``expected.unsqueeze(1)``; AdamW with ``amsgrad=True``;
``torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)``; the soft target update through
``state_dict()`` (``target[key] = policy[key] * TAU + target[key] * (1 - TAU)``, ``load_state_dict``) or
the hard one (``target_net.load_state_dict(policy_net.state_dict())``); epsilon-greedy actions as
``policy_net(state).max(1).indices.view(1, 1)`` and ``torch.tensor([[a]], dtype=torch.long)``."""

from __future__ import annotations

import math
from collections import deque, namedtuple

import numpy as np
from shim import nn, optim, torch

BATCH_SIZE = 6
GAMMA = 0.9
TAU = 0.05
EPS_START, EPS_END, EPS_DECAY = 0.9, 0.05, 10.0
UPDATE = "soft"  # or "hard"
DEVICE = "cpu"

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory:
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size, rng):
        picks = rng.choice(len(self.memory), batch_size, replace=False)
        return [self.memory[i] for i in picks]

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, 16)
        self.layer2 = nn.Linear(16, 16)
        self.layer3 = nn.Linear(16, n_actions)

    def forward(self, x):
        x = torch.relu(self.layer1(x))
        x = torch.relu(self.layer2(x))
        return self.layer3(x)


class Agent(nn.Module):
    def __init__(self, n_observations=4, n_actions=2):
        super().__init__()
        self.policy_net = DQN(n_observations, n_actions)
        self.target_net = DQN(n_observations, n_actions)


class GridWalk:
    """A walker on 0..5: action 1 steps right, 0 left; reaching 5 pays 1 and ends the episode."""

    def reset(self):
        self.position = 1
        return self.observe()

    def observe(self):
        return np.array([self.position / 5, 1.0, math.sin(self.position), (self.position % 2) * 1.0], np.float32)

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position == 5
        return self.observe(), 1.0 if done else -0.05, done


def build():
    torch.manual_seed(0)
    agent = Agent()
    agent.target_net.load_state_dict(agent.policy_net.state_dict())
    return agent


def train(model, steps=4):
    device = torch.device(DEVICE)
    model = model.to(device)
    policy_net, target_net = model.policy_net, model.target_net
    optimizer = optim.AdamW(policy_net.parameters(), lr=1e-3, amsgrad=True)
    criterion = nn.SmoothL1Loss()
    memory = ReplayMemory(100)
    rng = np.random.default_rng(0)
    env = GridWalk()
    record = {"losses": [], "q_mean": [], "actions": []}
    state = torch.tensor(env.reset(), dtype=torch.float32, device=device).unsqueeze(0)
    steps_done = 0
    while len(record["losses"]) < steps:
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1.0 * steps_done / EPS_DECAY)
        steps_done += 1
        if rng.random() > eps_threshold:
            with torch.no_grad():
                action = policy_net(state).max(1).indices.view(1, 1)
        else:
            action = torch.tensor([[int(rng.integers(0, 2))]], device=device, dtype=torch.long)
        record["actions"].append(action.item())
        observation, reward, terminated = env.step(action.item())
        reward = torch.tensor([reward], device=device)
        next_state = None if terminated else torch.tensor(observation, dtype=torch.float32, device=device).unsqueeze(0)
        memory.push(state, action, next_state, reward)
        state = torch.tensor(env.reset(), device=device).unsqueeze(0) if terminated else next_state

        if len(memory) < BATCH_SIZE:
            continue
        transitions = memory.sample(BATCH_SIZE, rng)
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(
            tuple(map(lambda s: s is not None, batch.next_state)), device=device, dtype=torch.bool
        )
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH_SIZE, device=device)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()

        if UPDATE == "soft":
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)
        elif steps_done % 3 == 0:
            target_net.load_state_dict(policy_net.state_dict())
        record["losses"].append(loss.item())
        record["q_mean"].append(state_action_values.mean().item())
    record["target_gap"] = sum(
        (p - q).abs().sum().item() for p, q in zip(policy_net.parameters(), target_net.parameters())
    )
    record["target_requires_grad"] = all(p.requires_grad for p in target_net.parameters())
    return record


if __name__ == "__main__":
    print(train(build()))
