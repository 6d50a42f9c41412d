"""The official tutorial "NLP From Scratch: Generating Names with a Character-Level RNN"
(intermediate_source/char_rnn_generation_tutorial.py), at a tiny size on a handful of made-up names.

Its idioms: ``n_letters = len(all_letters) + 1  # Plus EOS marker``; the category one-hot ``torch.zeros(1,
n_categories)`` with ``tensor[0][li] = 1``; ``inputTensor`` by ``tensor[li][0][all_letters.find(letter)] = 1``;
``targetTensor`` as ``torch.LongTensor(letter_indexes)`` with the EOS index appended; the RNN cell over
``torch.cat((category, input, hidden), 1)``, then ``torch.cat((hidden, output), 1)`` into ``o2o``,
``nn.Dropout(0.1)`` and ``nn.LogSoftmax(dim=1)``; the training step's ``target_line_tensor.unsqueeze_(-1)``,
``loss = torch.Tensor([0])`` accumulated by ``loss += criterion(output, target_line_tensor[i])`` over the
letters, ``rnn.zero_grad()``, ``p.data.add_(p.grad.data, alpha=-learning_rate)`` and ``loss.item() /
input_line_tensor.size(0)``; random pairs by ``random.randint``; and sampling under ``torch.no_grad()`` by
``topv, topi = output.topk(1)``, ``topi = topi[0][0]``, ``if topi == n_letters - 1: break`` and
``all_letters[topi]`` (a string indexed by a 0-d tensor).
"""

from __future__ import annotations

import random
import string

from shim import nn, torch

DROPOUT = 0.1
all_letters = string.ascii_letters + " .,;'-"
n_letters = len(all_letters) + 1  # Plus EOS marker
category_lines = {
    "Russian": ["Ivanov", "Petrov", "Sokolov", "Popov"],
    "German": ["Muller", "Schmidt", "Weber", "Becker"],
    "Spanish": ["Garcia", "Lopez", "Perez", "Sanchez"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)
max_length = 8


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size

        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(DROPOUT)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


def build():
    torch.manual_seed(0)
    return RNN(n_letters, 32, n_letters)


def randomChoice(values):
    return values[random.randint(0, len(values) - 1)]


def randomTrainingPair():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    return category, line


# One-hot vector for category
def categoryTensor(category):
    li = all_categories.index(category)
    tensor = torch.zeros(1, n_categories)
    tensor[0][li] = 1
    return tensor


# One-hot matrix of first to last letters (not including EOS) for input
def inputTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li in range(len(line)):
        letter = line[li]
        tensor[li][0][all_letters.find(letter)] = 1
    return tensor


# ``LongTensor`` of second letter to end (EOS) for target
def targetTensor(line):
    letter_indexes = [all_letters.find(line[li]) for li in range(1, len(line))]
    letter_indexes.append(n_letters - 1)  # EOS
    return torch.LongTensor(letter_indexes)


def randomTrainingExample():
    category, line = randomTrainingPair()
    category_tensor = categoryTensor(category)
    input_line_tensor = inputTensor(line)
    target_line_tensor = targetTensor(line)
    return category_tensor, input_line_tensor, target_line_tensor


def train(model, steps=3):
    rnn = model
    criterion = nn.NLLLoss()
    learning_rate = 0.05

    def train_step(category_tensor, input_line_tensor, target_line_tensor):
        target_line_tensor.unsqueeze_(-1)
        hidden = rnn.initHidden()

        rnn.zero_grad()

        loss = torch.Tensor([0])  # you can also just simply use ``loss = 0``

        for i in range(input_line_tensor.size(0)):
            output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
            l = criterion(output, target_line_tensor[i])  # noqa: E741
            loss += l

        loss.backward()

        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)

        return output, loss.item() / input_line_tensor.size(0)

    random.seed(0)
    losses = []
    for _ in range(steps):
        output, loss = train_step(*randomTrainingExample())
        losses.append(loss)

    # Sample from a category and starting letter
    def sample(category, start_letter="A"):
        with torch.no_grad():  # no need to track history in sampling
            category_tensor = categoryTensor(category)
            input = inputTensor(start_letter)
            hidden = rnn.initHidden()

            output_name = start_letter

            for _i in range(max_length):
                output, hidden = rnn(category_tensor, input[0], hidden)
                topv, topi = output.topk(1)
                topi = topi[0][0]
                if topi == n_letters - 1:
                    break
                else:
                    letter = all_letters[topi]
                    output_name += letter
                input = inputTensor(letter)

            return output_name, topv.item()

    rnn.eval()
    samples = [sample(category, start) for category in all_categories for start in "ABC"]
    return {
        "losses": losses,
        "output": output.tolist(),
        "target": targetTensor("Abc").tolist(),
        "samples": samples,
    }


if __name__ == "__main__":
    print(train(build(), steps=200))
