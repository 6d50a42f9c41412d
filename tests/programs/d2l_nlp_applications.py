"""Dive into Deep Learning's natural language processing applications (PyTorch edition) at tiny sizes on a
synthetic review and inference corpus (no download): sentiment analysis with a bidirectional LSTM over
pretrained-style embeddings and with textCNN, and natural language inference with decomposable attention,
each trained by the book's ``train_ch13``.

Its idioms: ``truncate_pad`` and ``torch.tensor([truncate_pad(vocab[line], num_steps, vocab['<pad>']) for line
in train_tokens])``; ``BiRNN``'s ``nn.LSTM(embed_size, num_hiddens, num_layers=num_layers, bidirectional=True)``,
``self.embedding(inputs.T)``, ``self.encoder.flatten_parameters()`` and ``torch.cat((outputs[0], outputs[-1]),
dim=1)``; ``init_weights`` over ``m._flat_weights_names``; ``net.embedding.weight.data.copy_(embeds)`` and
``net.embedding.weight.requires_grad = False`` (a frozen table the optimizer still lists); ``TextCNN``'s
``constant_embedding``, ``nn.AdaptiveAvgPool1d(1)``, ``nn.ModuleList`` of ``nn.Conv1d(2 * embed_size, c, k)``,
``embeddings.permute(0, 2, 1)`` and ``torch.cat([torch.squeeze(self.relu(self.pool(conv(embeddings))), dim=-1)
for conv in self.convs], dim=1)``; the decomposable attention's ``mlp`` list of ``nn.Dropout``, ``nn.Linear``,
``nn.ReLU`` and ``nn.Flatten(start_dim=1)``, ``Attend``'s ``torch.bmm(f_A, f_B.permute(0, 2, 1))`` and
``torch.bmm(F.softmax(e, dim=-1), B)``, ``Compare``'s ``torch.cat([A, beta], dim=2)``, ``Aggregate``'s ``V_A.sum(
dim=1)``, a model called on ``X = [premises, hypotheses]``; ``train_batch_ch13``'s ``if isinstance(X, list): X = [x.to(
devices[0]) for x in X]`` and ``l.sum().backward()`` of ``nn.CrossEntropyLoss(reduction="none")``; ``train_ch13``'s
``nn.DataParallel(net, device_ids=devices).to(devices[0])``; and ``predict_sentiment``'s ``torch.argmax(net(
sequence.reshape(1, -1)), dim=1)``."""

from __future__ import annotations

import collections
import random

from shim import F, nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "birnn"  # or "textcnn", "decomposable"
SHUFFLE = True
DROPOUT = 0.2
embed_size, num_steps, batch_size = 8, 8, 8

POSITIVE = ["good", "great", "fun", "love", "best", "nice"]
NEGATIVE = ["bad", "boring", "awful", "hate", "worst", "dull"]
NEUTRAL = ["the", "movie", "film", "plot", "was", "is", "a", "and", "actors", "story"]


def read_imdb(is_train):
    """A synthetic IMDb: reviews of neutral words with a few positive or negative ones, label 1 or 0."""
    rng = random.Random(0 if is_train else 1)
    reviews, labels = [], []
    for _ in range(32 if is_train else 16):
        label = rng.randrange(2)
        words = [rng.choice(NEUTRAL) for _ in range(rng.randint(4, 9))]
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(POSITIVE if label else NEGATIVE))
        reviews.append(" ".join(words))
        labels.append(label)
    return reviews, labels


def tokenize(lines, token="word"):
    """Split text lines into word or character tokens."""
    if token == "word":
        return [line.split() for line in lines]
    return [list(line) for line in lines]


class Vocab:
    """Vocabulary for text."""

    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        tokens = tokens or []
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        counter = collections.Counter(tokens)
        self._token_freqs = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
        self.idx_to_token = ["<unk>"] + (reserved_tokens or [])
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self._token_freqs:
            if freq < min_freq:
                break
            if token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    @property
    def unk(self):
        return 0


def truncate_pad(line, num_steps, padding_token):
    """Truncate or pad sequences."""
    if len(line) > num_steps:
        return line[:num_steps]  # Truncate
    return line + [padding_token] * (num_steps - len(line))  # Pad


def load_data_imdb(batch_size, num_steps=500):
    """Return data iterators and the vocabulary of the IMDb review dataset."""
    train_data, test_data = read_imdb(True), read_imdb(False)
    train_tokens = tokenize(train_data[0], token="word")
    test_tokens = tokenize(test_data[0], token="word")
    vocab = Vocab(train_tokens, min_freq=1, reserved_tokens=["<pad>"])
    train_features = torch.tensor([truncate_pad(vocab[line], num_steps, vocab["<pad>"]) for line in train_tokens])
    test_features = torch.tensor([truncate_pad(vocab[line], num_steps, vocab["<pad>"]) for line in test_tokens])
    train_iter = data.DataLoader(
        data.TensorDataset(train_features, torch.tensor(train_data[1])), batch_size, shuffle=SHUFFLE
    )
    test_iter = data.DataLoader(data.TensorDataset(test_features, torch.tensor(test_data[1])), batch_size)
    return train_iter, test_iter, vocab


class TokenEmbedding:
    """A GloVe-like embedding table: each word's vector drawn from its own seeded generator (no download)."""

    def __init__(self, dim):
        words = POSITIVE + NEGATIVE + NEUTRAL + ["man", "woman", "dog"]
        g = torch.Generator().manual_seed(11)
        self.idx_to_token = ["<unk>"] + words
        self.idx_to_vec = torch.cat([torch.zeros((1, dim)), torch.randn((len(words), dim), generator=g)])
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        self.unknown_idx = 0

    def __getitem__(self, tokens):
        indices = [self.token_to_idx.get(token, self.unknown_idx) for token in tokens]
        vecs = self.idx_to_vec[torch.tensor(indices)]
        return vecs

    def __len__(self):
        return len(self.idx_to_token)


class BiRNN(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # Set `bidirectional` to True to get a bidirectional RNN
        self.encoder = nn.LSTM(embed_size, num_hiddens, num_layers=num_layers, bidirectional=True)
        self.decoder = nn.Linear(4 * num_hiddens, 2)

    def forward(self, inputs):
        # The shape of `inputs` is (batch size, no. of time steps). Because LSTM requires its input's first
        # dimension to be the temporal dimension, the input is transposed before obtaining token
        # representations. The output shape is (no. of time steps, batch size, word vector dimension)
        embeddings = self.embedding(inputs.T)
        self.encoder.flatten_parameters()
        # Returns hidden states of the last hidden layer at different time steps. The shape of `outputs` is
        # (no. of time steps, batch size, 2 * no. of hidden units)
        outputs, _ = self.encoder(embeddings)
        # Concatenate the hidden states at the initial and final time steps as the input of the fully connected
        # layer. Its shape is (batch size, 4 * no. of hidden units)
        encoding = torch.cat((outputs[0], outputs[-1]), dim=1)
        outs = self.decoder(encoding)
        return outs


class TextCNN(nn.Module):
    def __init__(self, vocab_size, embed_size, kernel_sizes, num_channels, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # The embedding layer not to be trained
        self.constant_embedding = nn.Embedding(vocab_size, embed_size)
        self.dropout = nn.Dropout(DROPOUT)
        self.decoder = nn.Linear(sum(num_channels), 2)
        # The adaptive average pooling layer has no parameters
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.relu = nn.ReLU()
        # Create multiple one-dimensional convolutional layers
        self.convs = nn.ModuleList()
        for c, k in zip(num_channels, kernel_sizes, strict=False):
            self.convs.append(nn.Conv1d(2 * embed_size, c, k))

    def forward(self, inputs):
        # Concatenate two embedding layer outputs with shape (batch size, no. of tokens, token vector dimension)
        # along vectors
        embeddings = torch.cat((self.embedding(inputs), self.constant_embedding(inputs)), dim=2)
        # Per the input format of one-dimensional convolutional layers, rearrange the tensor so that the second
        # dimension stores channels
        embeddings = embeddings.permute(0, 2, 1)
        # For each one-dimensional convolutional layer, after max-over-time pooling, a tensor of shape (batch
        # size, no. of channels, 1) is obtained. Remove the last dimension and concatenate along channels
        encoding = torch.cat(
            [torch.squeeze(self.relu(self.pool(conv(embeddings))), dim=-1) for conv in self.convs], dim=1
        )
        outputs = self.decoder(self.dropout(encoding))
        return outputs


# ---- natural language inference: decomposable attention ----

SUBJECTS = ["a man", "a woman", "the dog", "two kids"]
VERBS = [("runs", "moves", "sleeps"), ("eats", "consumes", "fasts"), ("sings", "performs", "is silent")]


def read_snli(is_train):
    """A synthetic SNLI: a premise, and a hypothesis that entails (0), contradicts (1) or is neutral (2)."""
    rng = random.Random(2 if is_train else 3)
    premises, hypotheses, labels = [], [], []
    for _ in range(32 if is_train else 16):
        subject, (verb, entailed, contradiction) = rng.choice(SUBJECTS), rng.choice(VERBS)
        label = rng.randrange(3)
        premises.append(f"{subject} {verb} outside")
        other = rng.choice([v for v in VERBS if v[0] != verb])[0]
        hypotheses.append(f"{subject} " + [entailed, contradiction, other][label])
        labels.append(label)
    return premises, hypotheses, labels


class SNLIDataset(data.Dataset):
    """A customized dataset to load the SNLI dataset."""

    def __init__(self, dataset, num_steps, vocab=None):
        self.num_steps = num_steps
        all_premise_tokens = tokenize(dataset[0])
        all_hypothesis_tokens = tokenize(dataset[1])
        if vocab is None:
            self.vocab = Vocab(all_premise_tokens + all_hypothesis_tokens, min_freq=1, reserved_tokens=["<pad>"])
        else:
            self.vocab = vocab
        self.premises = self._pad(all_premise_tokens)
        self.hypotheses = self._pad(all_hypothesis_tokens)
        self.labels = torch.tensor(dataset[2])

    def _pad(self, lines):
        return torch.tensor([truncate_pad(self.vocab[line], self.num_steps, self.vocab["<pad>"]) for line in lines])

    def __getitem__(self, idx):
        return (self.premises[idx], self.hypotheses[idx]), self.labels[idx]

    def __len__(self):
        return len(self.premises)


def load_data_snli(batch_size, num_steps=50):
    train_set = SNLIDataset(read_snli(True), num_steps)
    test_set = SNLIDataset(read_snli(False), num_steps, train_set.vocab)
    train_iter = data.DataLoader(train_set, batch_size, shuffle=SHUFFLE)
    test_iter = data.DataLoader(test_set, batch_size, shuffle=False)
    return train_iter, test_iter, train_set.vocab


def mlp(num_inputs, num_hiddens, flatten):
    net = []
    net.append(nn.Dropout(DROPOUT))
    net.append(nn.Linear(num_inputs, num_hiddens))
    net.append(nn.ReLU())
    if flatten:
        net.append(nn.Flatten(start_dim=1))
    net.append(nn.Dropout(DROPOUT))
    net.append(nn.Linear(num_hiddens, num_hiddens))
    net.append(nn.ReLU())
    if flatten:
        net.append(nn.Flatten(start_dim=1))
    return nn.Sequential(*net)


class Attend(nn.Module):
    def __init__(self, num_inputs, num_hiddens, **kwargs):
        super().__init__(**kwargs)
        self.f = mlp(num_inputs, num_hiddens, flatten=False)

    def forward(self, A, B):
        # Shape of `A`/`B`: (`batch_size`, no. of tokens in sequence A/B, `embed_size`)
        # Shape of `f_A`/`f_B`: (`batch_size`, no. of tokens in sequence A/B, `num_hiddens`)
        f_A = self.f(A)
        f_B = self.f(B)
        # Shape of `e`: (`batch_size`, no. of tokens in sequence A, no. of tokens in sequence B)
        e = torch.bmm(f_A, f_B.permute(0, 2, 1))
        # Shape of `beta`: (`batch_size`, no. of tokens in sequence A, `embed_size`), where sequence B is softly
        # aligned with each token (axis 1 of `beta`) in sequence A
        beta = torch.bmm(F.softmax(e, dim=-1), B)
        # Shape of `alpha`: (`batch_size`, no. of tokens in sequence B, `embed_size`), where sequence A is softly
        # aligned with each token (axis 1 of `alpha`) in sequence B
        alpha = torch.bmm(F.softmax(e.permute(0, 2, 1), dim=-1), A)
        return beta, alpha


class Compare(nn.Module):
    def __init__(self, num_inputs, num_hiddens, **kwargs):
        super().__init__(**kwargs)
        self.g = mlp(num_inputs, num_hiddens, flatten=False)

    def forward(self, A, B, beta, alpha):
        V_A = self.g(torch.cat([A, beta], dim=2))
        V_B = self.g(torch.cat([B, alpha], dim=2))
        return V_A, V_B


class Aggregate(nn.Module):
    def __init__(self, num_inputs, num_hiddens, num_outputs, **kwargs):
        super().__init__(**kwargs)
        self.h = mlp(num_inputs, num_hiddens, flatten=True)
        self.linear = nn.Linear(num_hiddens, num_outputs)

    def forward(self, V_A, V_B):
        # Sum up both sets of comparison vectors
        V_A = V_A.sum(dim=1)
        V_B = V_B.sum(dim=1)
        # Feed the concatenation of both summarization results into an MLP
        Y_hat = self.linear(self.h(torch.cat([V_A, V_B], dim=1)))
        return Y_hat


class DecomposableAttention(nn.Module):
    def __init__(self, vocab, embed_size, num_hiddens, num_inputs_attend=8, num_inputs_compare=16,
                 num_inputs_agg=32, **kwargs):  # fmt: skip
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(len(vocab), embed_size)
        self.attend = Attend(num_inputs_attend, num_hiddens)
        self.compare = Compare(num_inputs_compare, num_hiddens)
        # There are 3 possible outputs: entailment, contradiction, and neutral
        self.aggregate = Aggregate(num_inputs_agg, num_hiddens, num_outputs=3)

    def forward(self, X):
        premises, hypotheses = X
        A = self.embedding(premises)
        B = self.embedding(hypotheses)
        beta, alpha = self.attend(A, B)
        V_A, V_B = self.compare(A, B, beta, alpha)
        Y_hat = self.aggregate(V_A, V_B)
        return Y_hat


# ---- training ----


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def evaluate_accuracy_gpu(net, data_iter, device=None):
    """Compute the accuracy for a model on a dataset using a GPU."""
    if isinstance(net, nn.Module):
        net.eval()  # Set the model to evaluation mode
        if not device:
            device = next(iter(net.parameters())).device
    correct, total = 0.0, 0
    with torch.no_grad():
        for X, y in data_iter:
            if isinstance(X, list):
                # Required for BERT Fine-tuning (to be covered later)
                X = [x.to(device) for x in X]
            else:
                X = X.to(device)
            y = y.to(device)
            correct += accuracy(net(X), y)
            total += y.numel()
    return correct / total


def train_batch_ch13(net, X, y, loss, trainer, devices):
    """Train for a minibatch with multiple GPUs (defined in Chapter 13)."""
    if isinstance(X, list):
        # Required for BERT fine-tuning (to be covered later)
        X = [x.to(devices[0]) for x in X]
    else:
        X = X.to(devices[0])
    y = y.to(devices[0])
    net.train()
    trainer.zero_grad()
    pred = net(X)
    l = loss(pred, y)  # noqa: E741  (the book's name)
    l.sum().backward()
    trainer.step()
    train_loss_sum = l.sum()
    train_acc_sum = accuracy(pred, y)
    return train_loss_sum, train_acc_sum


def train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs, devices):
    """Train a model with multiple GPUs (defined in Chapter 13)."""
    history = {"losses": [], "train_acc": [], "test_acc": []}
    net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    for _ in range(num_epochs):
        # Sum of training loss, sum of training accuracy, no. of examples, no. of predictions
        metric = [0.0] * 4
        for features, labels in train_iter:
            l, acc = train_batch_ch13(net, features, labels, loss, trainer, devices)  # noqa: E741
            metric = [a + float(b) for a, b in zip(metric, (l, acc, labels.shape[0], labels.numel()), strict=True)]
        test_acc = evaluate_accuracy_gpu(net, test_iter)
        history["losses"].append(metric[0] / metric[2])
        history["train_acc"].append(metric[1] / metric[3])
        history["test_acc"].append(test_acc)
    return history


def try_all_gpus():
    """Return all available GPUs, or [cpu(),] if no GPU exists (here: the CPU, as the comparison runs)."""
    return [torch.device("cpu")]


def predict_sentiment(net, vocab, sequence):
    """Predict the sentiment of a text sequence."""
    sequence = torch.tensor(vocab[sequence.split()], device=try_all_gpus()[0])
    label = torch.argmax(net(sequence.reshape(1, -1)), dim=1)
    return "positive" if label == 1 else "negative"


def predict_snli(net, vocab, premise, hypothesis):
    """Predict the logical relationship between the premise and hypothesis."""
    net.eval()
    premise = torch.tensor(vocab[premise], device=try_all_gpus()[0])
    hypothesis = torch.tensor(vocab[hypothesis], device=try_all_gpus()[0])
    label = torch.argmax(net([premise.reshape((1, -1)), hypothesis.reshape((1, -1))]), dim=1)
    return "entailment" if label == 0 else "contradiction" if label == 1 else "neutral"


def build():
    torch.manual_seed(0)
    if MODEL == "decomposable":
        _, _, vocab = load_data_snli(batch_size, num_steps)
        return DecomposableAttention(vocab, embed_size, 16, embed_size, 2 * embed_size, 2 * 16)
    _, _, vocab = load_data_imdb(batch_size, num_steps)
    if MODEL == "textcnn":
        return TextCNN(len(vocab), embed_size, [2, 3, 4], [4, 4, 4])
    return BiRNN(len(vocab), embed_size, 8, 2)


def train(net, steps=3):
    torch.manual_seed(1)
    devices = try_all_gpus()
    record = {}
    if MODEL == "decomposable":
        train_iter, test_iter, vocab = load_data_snli(batch_size, num_steps)
        embeds = TokenEmbedding(embed_size)[vocab.idx_to_token]
        net.embedding.weight.data.copy_(embeds)
        trainer = torch.optim.Adam(net.parameters(), lr=0.01)
        loss = nn.CrossEntropyLoss(reduction="none")
        record.update(train_ch13(net, train_iter, test_iter, loss, trainer, steps, devices))
        record["predictions"] = [
            predict_snli(net, vocab, ["a", "man", "runs", "outside"], ["a", "man", "moves"]),
            predict_snli(net, vocab, ["the", "dog", "eats", "outside"], ["the", "dog", "fasts"]),
        ]
        return record
    train_iter, test_iter, vocab = load_data_imdb(batch_size, num_steps)
    glove_embedding = TokenEmbedding(embed_size)
    embeds = glove_embedding[vocab.idx_to_token]
    record["embeds"] = [list(embeds.shape), float(embeds.sum())]
    if MODEL == "textcnn":

        def init_weights(module):
            if type(module) in (nn.Linear, nn.Conv1d):
                nn.init.xavier_uniform_(module.weight)

        net.apply(init_weights)
        net.embedding.weight.data.copy_(embeds)
        net.constant_embedding.weight.data.copy_(embeds)
        net.constant_embedding.weight.requires_grad = False
        lr = 0.01
    else:

        def init_weights(module):
            if type(module) == nn.Linear:  # noqa: E721  (the book's test)
                nn.init.xavier_uniform_(module.weight)
            if type(module) == nn.LSTM:  # noqa: E721
                for param in module._flat_weights_names:
                    if "weight" in param:
                        nn.init.xavier_uniform_(module._parameters[param])

        net.apply(init_weights)
        net.embedding.weight.data.copy_(embeds)
        net.embedding.weight.requires_grad = False
        lr = 0.01
    trainer = torch.optim.Adam(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss(reduction="none")
    record.update(train_ch13(net, train_iter, test_iter, loss, trainer, steps, devices))
    record["predictions"] = [
        predict_sentiment(net, vocab, "this movie is so great"),
        predict_sentiment(net, vocab, "this movie is so bad"),
    ]
    record["frozen"] = float(net.embedding.weight.sum() if MODEL == "birnn" else net.constant_embedding.weight.sum())
    return record


if __name__ == "__main__":
    print(train(build()))
