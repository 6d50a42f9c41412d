"""The official tutorial "NLP From Scratch: Classifying Names with a Character-Level RNN", at a tiny size
on a handful of made-up names: letters one-hot encoded by `torch.zeros(len(line), 1, n_letters)` and
`tensor[li][0][letterToIndex(letter)] = 1`, the tutorial's hand-written RNN cell (`nn.Linear` layers on
`torch.cat((input, hidden), 1)`, `nn.LogSoftmax(dim=1)`), `nn.NLLLoss` against `torch.tensor([index],
dtype=torch.long)`, the manual update `p.data.add_(p.grad.data, alpha=-learning_rate)` after
`rnn.zero_grad()`, and predictions by `output.topk(1)` / `topk(n, 1, True)` under `torch.no_grad()`.
The tutorial picks training examples with `random.randint`; here Python's generator is seeded."""

from __future__ import annotations

import random
import string

from shim import nn, torch

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
category_lines = {
    "English": ["Smith", "Brown", "Taylor", "Wilson"],
    "French": ["Dubois", "Moreau", "Laurent", "Girard"],
    "Japanese": ["Sato", "Suzuki", "Takahashi", "Tanaka"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)
n_hidden = 16


def letterToIndex(letter):
    return all_letters.find(letter)


def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


def build():
    torch.manual_seed(0)
    return RNN(n_letters, n_hidden, n_categories)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def randomChoice(values):
    return values[random.randint(0, len(values) - 1)]


def randomTrainingExample():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


def train(model, steps=4):
    rnn = model
    criterion = nn.NLLLoss()
    learning_rate = 0.005

    def train_step(category_tensor, line_tensor):
        hidden = rnn.initHidden()
        rnn.zero_grad()
        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)
        loss = criterion(output, category_tensor)
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)
        return output, loss.item()

    random.seed(0)
    losses, guesses = [], []
    for _ in range(steps):
        category, line, category_tensor, line_tensor = randomTrainingExample()
        output, loss = train_step(category_tensor, line_tensor)
        guess, guess_i = categoryFromOutput(output)
        losses.append(loss)
        guesses.append(guess_i)

    def evaluate(line_tensor):
        hidden = rnn.initHidden()
        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)
        return output

    confusion = torch.zeros(n_categories, n_categories)
    predictions = []
    with torch.no_grad():
        for category in all_categories:
            for line in category_lines[category][:2]:
                output = evaluate(lineToTensor(line))
                guess, guess_i = categoryFromOutput(output)
                confusion[all_categories.index(category)][guess_i] += 1
        output = evaluate(lineToTensor("Satoh"))
        topv, topi = output.topk(2, 1, True)
        for i in range(2):
            predictions.append([topv[0][i].item(), topi[0][i].item()])
    for i in range(n_categories):
        confusion[i] = confusion[i] / confusion[i].sum()
    return {
        "losses": losses,
        "guesses": guesses,
        "letter": letterToTensor("J").argmax().item(),
        "shape": list(lineToTensor("Jones").size()),
        "confusion": confusion.flatten().tolist(),
        "predictions": predictions,
    }


if __name__ == "__main__":
    print(train(build(), steps=100))
