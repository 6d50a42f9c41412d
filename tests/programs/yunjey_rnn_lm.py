"""yunjey/pytorch-tutorial's recurrent neural network, bidirectional recurrent neural network and LSTM
language model, at tiny sizes on synthetic images (read row by row) and a synthetic text. ``MODEL``
picks one.

Its idioms: ``h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)`` (``* 2`` for
the bidirectional one) and ``out, _ = self.lstm(x, (h0, c0))`` over ``batch_first=True``, the last step's
``self.fc(out[:, -1, :])``; ``images.reshape(-1, sequence_length, input_size)``; the test loop's
``torch.max(outputs.data, 1)``. The language model's ``Dictionary`` (``word2idx``, ``idx2word``,
``add_word``) and ``Corpus.get_data`` reading lines, ``words = line.split() + ['<eos>']``, ``ids =
torch.LongTensor(tokens)`` filled by ``ids[token] = ...``, ``num_batches = ids.size(0) // batch_size``,
``ids[:num_batches*batch_size].view(batch_size, -1)``; ``RNNLM`` with ``out.reshape(out.size(0) *
out.size(1), out.size(2))``; the states ``(torch.zeros(...), torch.zeros(...))`` carried over
``detach(states)`` = ``[state.detach() for state in states]``; ``inputs = ids[:, i:i+seq_length]``,
``targets = ids[:, (i+1):(i+1)+seq_length]``, ``criterion(outputs, targets.reshape(-1))``,
``model.zero_grad()``, ``clip_grad_norm_(model.parameters(), 0.5)``; the printed perplexity
``np.exp(loss.item())``; and sampling under ``torch.no_grad()`` from ``prob = torch.ones(vocab_size)``
by ``torch.multinomial(prob, num_samples=1).unsqueeze(1)``, ``prob = out.exp()``, ``word_id =
torch.multinomial(prob, num_samples=1).item()`` and ``input.fill_(word_id)``, writing the words."""

# ruff: noqa: UP032, B007  (the tutorial's spelling is the point: .format and unused loop names)
from __future__ import annotations

import numpy as np
from shim import nn, torch

MODEL = "rnn"  # or "birnn", "language_model"
SHUFFLE = True
USE_CUDA = True  # the comparisons set False: both libraries on the CPU

# Hyper-parameters (images of 5 rows of 6 pixels)
sequence_length = 5
input_size = 6
hidden_size = 8
num_layers = 2
num_classes = 3
batch_size = 4
learning_rate = 0.01

# The language model's
embed_size = 6
lm_hidden_size = 10
lm_num_layers = 1
seq_length = 4
lm_batch_size = 2
num_samples = 6

TEXT = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a cat saw a dog",
    "the dog saw the cat on the mat",
]


# Recurrent neural network (many-to-one)
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        device = x.device
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size)
        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out


# Bidirectional recurrent neural network (many-to-one)
class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, num_classes)  # 2 for bidirection

    def forward(self, x):
        device = x.device
        # Set initial states
        h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)  # 2 for bidirection
        c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size*2)
        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0

    def add_word(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1

    def __len__(self):
        return len(self.word2idx)


class Corpus:
    def __init__(self):
        self.dictionary = Dictionary()

    def get_data(self, lines, batch_size=20):
        # Add words to the dictionary
        tokens = 0
        for line in lines:
            words = line.split() + ["<eos>"]
            tokens += len(words)
            for word in words:
                self.dictionary.add_word(word)
        # Tokenize the file content
        ids = torch.LongTensor(tokens)
        token = 0
        for line in lines:
            words = line.split() + ["<eos>"]
            for word in words:
                ids[token] = self.dictionary.word2idx[word]
                token += 1
        num_batches = ids.size(0) // batch_size
        ids = ids[: num_batches * batch_size]
        return ids.view(batch_size, -1)


# RNN based language model
class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        # Embed word ids to vectors
        x = self.embed(x)
        # Forward propagate LSTM
        out, (h, c) = self.lstm(x, h)
        # Reshape output to (batch_size*sequence_length, hidden_size)
        out = out.reshape(out.size(0) * out.size(1), out.size(2))
        # Decode hidden states of all time steps
        out = self.linear(out)
        return out, (h, c)


def build():
    torch.manual_seed(0)
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    if MODEL == "rnn":
        return RNN(input_size, hidden_size, num_layers, num_classes).to(device)
    if MODEL == "birnn":
        return BiRNN(input_size, hidden_size, num_layers, num_classes).to(device)
    vocab_size = len({word for line in TEXT for word in line.split()}) + 1
    return RNNLM(vocab_size, embed_size, lm_hidden_size, lm_num_layers).to(device)


# Truncated backpropagation
def detach(states):
    return [state.detach() for state in states]


def language_model(model, steps, device, record):
    # Load "Penn Treebank" dataset
    corpus = Corpus()
    ids = corpus.get_data(TEXT, lm_batch_size)
    vocab_size = len(corpus.dictionary)
    record["ids"] = ids.tolist()
    # Loss and optimizer
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    num_batches = ids.size(1) // seq_length
    # Train the model
    for epoch in range(steps):
        # Set initial hidden and cell states
        states = (
            torch.zeros(lm_num_layers, lm_batch_size, lm_hidden_size).to(device),
            torch.zeros(lm_num_layers, lm_batch_size, lm_hidden_size).to(device),
        )
        for i in range(0, ids.size(1) - seq_length, seq_length):
            # Get mini-batch inputs and targets
            inputs = ids[:, i : i + seq_length].to(device)
            targets = ids[:, (i + 1) : (i + 1) + seq_length].to(device)
            # Forward pass
            states = detach(states)
            outputs, states = model(inputs, states)
            loss = criterion(outputs, targets.reshape(-1))
            # Backward and optimize
            model.zero_grad()
            loss.backward()
            record["norms"].append(float(nn.utils.clip_grad_norm_(model.parameters(), 0.5)))
            optimizer.step()
            step = (i + 1) // seq_length
            record["losses"].append(loss.item())
            record["lines"].append(
                "Epoch [{}/{}], Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}".format(
                    epoch + 1, steps, step, num_batches, loss.item(), np.exp(loss.item())
                )
            )
        record["losses"] = record["losses"][: epoch + 1]  # one a step in the comparison: the epoch's first
    # Test the model
    torch.manual_seed(5)
    with torch.no_grad():
        words = []
        # Set intial hidden ane cell states
        state = (
            torch.zeros(lm_num_layers, 1, lm_hidden_size).to(device),
            torch.zeros(lm_num_layers, 1, lm_hidden_size).to(device),
        )
        # Select one word id randomly
        prob = torch.ones(vocab_size)
        input = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)
        for i in range(num_samples):
            # Forward propagate RNN
            output, state = model(input, state)
            # Sample a word id
            prob = output.exp()
            word_id = torch.multinomial(prob, num_samples=1).item()
            # Fill input with sampled word id for the next time step
            input.fill_(word_id)
            # File write
            word = corpus.dictionary.idx2word[word_id]
            word = "\n" if word == "<eos>" else word + " "
            words.append(word)
        record["sample"] = "".join(words)
        record["last_output"] = output.tolist()
    return record


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    record = {"losses": [], "lines": [], "norms": []}
    if MODEL == "language_model":
        return language_model(model, steps, device, record)
    rng = np.random.RandomState(0)
    templates = np.random.RandomState(3).rand(num_classes, sequence_length, input_size)
    labels = rng.randint(0, num_classes, 4 * batch_size)
    images = (templates[labels] * 0.7 + rng.rand(len(labels), sequence_length, input_size) * 0.3).astype(np.float32)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images)[:, None], torch.from_numpy(labels))
    torch.manual_seed(1)
    train_loader = torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=SHUFFLE)
    test_loader = torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=False)
    # Loss and optimizer
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    # Train the model
    for i, (images, labels) in enumerate(train_loader):
        if i == steps:
            break
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    # Test the model
    model.eval()
    with torch.no_grad():
        correct = 0
        total = 0
        for images, labels in test_loader:
            images = images.reshape(-1, sequence_length, input_size).to(device)
            labels = labels.to(device)
            outputs = model(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
            record.setdefault("outputs", []).append(outputs.tolist())
        record["accuracy"] = "Test Accuracy of the model on the 10000 test images: {} %".format(100 * correct / total)
    return record


if __name__ == "__main__":
    print(train(build()))
