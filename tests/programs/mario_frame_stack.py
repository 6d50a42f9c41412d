"""The "Train a Mario-playing RL Agent" tutorial's double DQN, at a tiny size: a hand-written side-scroller
stands in for gym-super-mario-bros, its frames made from a seeded numpy generator as gym returns them
(``uint8`` arrays of height x width x 3).

Idioms: the environment wrappers written as functions over tensors (``SkipFrame`` summing rewards over
repeated actions, ``GrayScaleObservation`` by ``np.transpose(observation, (2, 0, 1))`` and
``torch.tensor(observation.copy(), dtype=torch.float)`` into torchvision's ``rgb_to_grayscale``
weights, ``ResizeObservation`` by ``F.interpolate(..., antialias=True)`` then ``Normalize(0, 255)`` and
``squeeze(0)``, ``FrameStack`` over a ``collections.deque(maxlen=4)`` into ``LazyFrames`` whose
``__array__`` is ``np.stack`` of the tensors); the agent's ``act`` (epsilon-greedy by
``np.random.rand()`` / ``np.random.randint``, ``state.__array__()``, ``torch.tensor(state,
device=...).unsqueeze(0)``, ``torch.argmax(action_values, axis=1).item()``, a decaying
``exploration_rate``); ``cache`` and ``recall`` by a ``deque`` replay memory, ``random.sample`` and
``map(torch.stack, zip(*batch))``; ``MarioNet`` with online and target CNNs built by a name-mangled
``__build_cnn``, the target frozen by ``p.requires_grad = False`` and synced by ``load_state_dict``;
``td_estimate`` by ``Q[np.arange(0, batch_size), action]``; ``td_target`` under ``@torch.no_grad()``
with double-DQN action selection and ``(1 - done.float())``; ``nn.SmoothL1Loss`` and Adam; ``save``
of ``dict(model=..., exploration_rate=...)`` by ``torch.save``; the MetricLogger's moving averages
by ``np.round(np.mean(...), 3)``.
"""

from __future__ import annotations

import io
import random
from collections import deque

import numpy as np
from shim import F, nn, optim, torch

FRAME, SHAPE, STACK, SKIP = 20, 12, 4, 2
ACTIONS = ["right", "right+jump", "left"]
EPISODE_STEPS = 8
BATCH, BURNIN, LEARN_EVERY, SYNC_EVERY = 4, 4, 1, 5


class TinyMario:
    """A side-scroller of one row: moving right scores, jumping clears pits, the frame shows the view."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.level = self.rng.integers(0, 4, size=64)  # 0 marks a pit
        self.x = 0

    def render(self):
        frame = np.zeros((FRAME, FRAME, 3), dtype=np.uint8)
        view = self.level[self.x : self.x + FRAME]
        for col, height in enumerate(view):
            frame[FRAME - 2 * height - 1 :, col, 1] = 120 + 30 * height
        frame[FRAME // 2, 2, :] = 255  # Mario
        frame[..., 2] = self.rng.integers(0, 40, size=(FRAME, FRAME), dtype=np.uint8)  # sky noise
        return frame

    def reset(self):
        self.x = 0
        return self.render()

    def step(self, action):
        jump = action == 1
        self.x = max(0, self.x + (-1 if action == 2 else 1))
        pit = self.level[self.x + 2] == 0 and not jump
        reward = (1.0 if action != 2 else -1.0) - (5.0 if pit else 0.0)
        done = bool(pit) or self.x >= len(self.level) - FRAME - 2
        return self.render(), reward, done, {"x_pos": self.x}


def skip_frame(env, action, skip=SKIP):
    total_reward = 0.0
    for _ in range(skip):
        obs, reward, done, info = env.step(action)
        total_reward += reward
        if done:
            break
    return obs, total_reward, done, info


def gray_scale(observation):
    observation = np.transpose(observation, (2, 0, 1))
    observation = torch.tensor(observation.copy(), dtype=torch.float)
    r, g, b = observation.unbind(dim=-3)
    return (0.2989 * r + 0.587 * g + 0.114 * b).to(observation.dtype).unsqueeze(dim=-3)


def resize(observation, shape=SHAPE):
    observation = F.interpolate(observation.unsqueeze(0), size=(shape, shape), mode="bilinear", antialias=True)
    observation = (observation - 0) / 255  # T.Normalize(0, 255)
    return observation.squeeze(0).squeeze(0)


def preprocess(observation):
    return resize(gray_scale(observation))


class LazyFrames:
    """gym's FrameStack observation: the frames, stacked when asked."""

    def __init__(self, frames):
        self._frames = list(frames)

    def __array__(self, dtype=None, copy=None):
        out = np.stack(self._frames, axis=0)
        return out.astype(dtype) if dtype is not None else out

    def __len__(self):
        return len(self._frames)


class FrameStack:
    def __init__(self, env, num_stack=STACK):
        self.env, self.frames = env, deque(maxlen=num_stack)

    def reset(self):
        observation = preprocess(self.env.reset())
        for _ in range(self.frames.maxlen):
            self.frames.append(observation)
        return LazyFrames(self.frames)

    def step(self, action):
        obs, reward, done, info = skip_frame(self.env, action)
        self.frames.append(preprocess(obs))
        return LazyFrames(self.frames), reward, done, info


class MarioNet(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        c, h, w = input_dim
        if h != SHAPE:
            raise ValueError(f"Expecting input height: {SHAPE}, got: {h}")
        self.online = self.__build_cnn(c, output_dim)
        self.target = self.__build_cnn(c, output_dim)
        self.target.load_state_dict(self.online.state_dict())
        for p in self.target.parameters():
            p.requires_grad = False

    def forward(self, input, model):  # noqa: A002 - the tutorial's name
        if model == "online":
            return self.online(input)
        elif model == "target":
            return self.target(input)

    def __build_cnn(self, c, output_dim):
        return nn.Sequential(
            nn.Conv2d(in_channels=c, out_channels=8, kernel_size=4, stride=2),
            nn.ReLU(),
            nn.Conv2d(in_channels=8, out_channels=8, kernel_size=3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(8 * 3 * 3, 32),
            nn.ReLU(),
            nn.Linear(32, output_dim),
        )


class Mario:
    def __init__(self, net, state_dim, action_dim):
        self.state_dim, self.action_dim = state_dim, action_dim
        self.device = "cpu"
        self.net = net.float().to(device=self.device)
        self.exploration_rate = 1
        self.exploration_rate_decay = 0.8
        self.exploration_rate_min = 0.1
        self.curr_step = 0
        self.memory = deque(maxlen=100)
        self.batch_size = BATCH
        self.gamma = 0.9
        self.optimizer = optim.Adam(self.net.parameters(), lr=0.001)
        self.loss_fn = nn.SmoothL1Loss()
        self.burnin, self.learn_every, self.sync_every = BURNIN, LEARN_EVERY, SYNC_EVERY

    def act(self, state):
        if np.random.rand() < self.exploration_rate:
            action_idx = np.random.randint(self.action_dim)
        else:
            state = state[0].__array__() if isinstance(state, tuple) else state.__array__()
            state = torch.tensor(state, device=self.device).unsqueeze(0)
            action_values = self.net(state, model="online")
            action_idx = torch.argmax(action_values, axis=1).item()
        self.exploration_rate *= self.exploration_rate_decay
        self.exploration_rate = max(self.exploration_rate_min, self.exploration_rate)
        self.curr_step += 1
        return action_idx

    def cache(self, state, next_state, action, reward, done):
        def first_if_tuple(x):
            return x[0] if isinstance(x, tuple) else x

        state = first_if_tuple(state).__array__()
        next_state = first_if_tuple(next_state).__array__()
        state = torch.tensor(state)
        next_state = torch.tensor(next_state)
        action = torch.tensor([action])
        reward = torch.tensor([reward])
        done = torch.tensor([done])
        self.memory.append((state, next_state, action, reward, done))

    def recall(self):
        batch = random.sample(self.memory, self.batch_size)
        state, next_state, action, reward, done = map(torch.stack, zip(*batch))
        return state, next_state, action.squeeze(), reward.squeeze(), done.squeeze()

    def td_estimate(self, state, action):
        current_Q = self.net(state, model="online")[np.arange(0, self.batch_size), action]
        return current_Q

    @torch.no_grad()
    def td_target(self, reward, next_state, done):
        next_state_Q = self.net(next_state, model="online")
        best_action = torch.argmax(next_state_Q, axis=1)
        next_Q = self.net(next_state, model="target")[np.arange(0, self.batch_size), best_action]
        return (reward + (1 - done.float()) * self.gamma * next_Q).float()

    def update_Q_online(self, td_estimate, td_target):
        loss = self.loss_fn(td_estimate, td_target)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def sync_Q_target(self):
        self.net.target.load_state_dict(self.net.online.state_dict())

    def save(self, f):
        torch.save(dict(model=self.net.state_dict(), exploration_rate=self.exploration_rate), f)

    def learn(self):
        if self.curr_step % self.sync_every == 0:
            self.sync_Q_target()
        if self.curr_step < self.burnin:
            return None, None
        if self.curr_step % self.learn_every != 0:
            return None, None
        state, next_state, action, reward, done = self.recall()
        td_est = self.td_estimate(state, action)
        td_tgt = self.td_target(reward, next_state, done)
        loss = self.update_Q_online(td_est, td_tgt)
        return (td_est.mean().item(), loss)


def build():
    torch.manual_seed(0)
    return MarioNet((STACK, SHAPE, SHAPE), len(ACTIONS))


def train(model, steps=3):
    random.seed(0)
    np.random.seed(0)
    env = FrameStack(TinyMario(seed=1))
    mario = Mario(model, (STACK, SHAPE, SHAPE), len(ACTIONS))
    losses, q_values, rewards, actions = [], [], [], []
    for _ in range(steps):
        state = env.reset()
        episode_reward = 0.0
        for _ in range(EPISODE_STEPS):
            action = mario.act(state)
            next_state, reward, done, info = env.step(action)
            mario.cache(state, next_state, action, reward, done)
            q, loss = mario.learn()
            if loss is not None:
                q_values.append(q)
                losses.append(loss)
            actions.append(action)
            episode_reward += reward
            state = next_state
            if done or info["x_pos"] > 40:
                break
        rewards.append(episode_reward)
    buffer = io.BytesIO()
    mario.save(buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    moving = [np.round(np.mean(losses[-4:]), 3), np.round(np.mean(q_values[-4:]), 3)]
    frame = np.asarray(state.__array__())
    return {
        "losses": losses[-steps:],
        "all_losses": losses,
        "q_values": q_values,
        "rewards": rewards,
        "actions": actions,
        "moving": [float(m) for m in moving],
        "saved": [sorted(saved["model"])[:2], saved["exploration_rate"]],
        "frame": [list(frame.shape), float(frame.sum())],
        "target_frozen": all(not p.requires_grad for p in model.target.parameters()),
    }


if __name__ == "__main__":
    print(train(build()))
