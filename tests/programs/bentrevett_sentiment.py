"""bentrevett/pytorch-sentiment-analysis's notebooks (1: simple RNN, 2: upgraded packed bidirectional LSTM with
pretrained embeddings, 3: FastText bag of bigrams, 4: CNN, 5: multi-class CNN), at tiny sizes on a synthetic
review corpus (words that lean positive or negative). ``MODEL`` picks one.

Idioms: a vocabulary built by ``collections.Counter`` with ``<unk>``/``<pad>`` (as torchtext's ``build_vocab``),
``generate_bigrams`` by ``set(zip(*[x[i:] for i in range(2)]))`` and ``' '.join(n_gram)``; ``[sent len, batch
size]`` batches; notebook 1's ``assert torch.equal(output[-1,:,:], hidden.squeeze(0))`` and ``optim.SGD(lr=1e-3)``;
``nn.BCEWithLogitsLoss`` over ``model(batch.text).squeeze(1)``; ``binary_accuracy`` by
``torch.round(torch.sigmoid(preds))``, ``(rounded_preds == y).float()`` and ``correct.sum() / len(correct)``;
notebook 2's ``nn.Embedding(padding_idx = pad_idx)``, ``nn.LSTM(num_layers=n_layers, bidirectional=bidirectional,
dropout=dropout)``, ``nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to('cpu'), enforce_sorted=False)``,
``output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)``, ``torch.cat((hidden[-2,:,:],
hidden[-1,:,:]), dim = 1)``, ``model.embedding.weight.data.copy_(pretrained_embeddings)`` and
``model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)``, ``predict_sentiment`` with
``torch.LongTensor(indexed).to(device).unsqueeze(1)`` and ``torch.sigmoid(model(tensor, length_tensor)).item()``;
notebook 3's ``F.avg_pool2d(embedded, (embedded.shape[1], 1)).squeeze(1)``; notebook 4's ``nn.ModuleList`` of
``nn.Conv2d(in_channels = 1, out_channels = n_filters, kernel_size = (fs, embedding_dim))``,
``F.relu(conv(embedded)).squeeze(3)``, ``F.max_pool1d(conv, conv.shape[2]).squeeze(2)`` and ``torch.cat(pooled,
dim = 1)``; notebook 5's ``categorical_accuracy`` by ``preds.argmax(1, keepdim = True)`` and
``top_pred.eq(y.view_as(top_pred)).sum()``; ``count_parameters``; ``epoch_time``-style lines with
``{train_acc*100:.2f}%``.
"""

from __future__ import annotations

import collections

import numpy as np
from shim import F, nn, optim, torch

MODEL = "rnn"  # or "lstm_packed", "fasttext", "cnn", "cnn_multiclass"
DROPOUT = 0.5
BATCH_SIZE = 4
EMBEDDING_DIM = 6
HIDDEN_DIM = 8
N_FILTERS = 3
FILTER_SIZES = [2, 3, 4]
N_CLASSES = 3
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

POSITIVE = ["good", "great", "fun", "superb", "moving"]
NEGATIVE = ["bad", "dull", "awful", "boring", "weak"]
NEUTRAL = ["the", "film", "was", "a", "plot", "and", "acting", "story"]


def corpus(n, seed):
    """Reviews and labels (positive 1, negative 0; with ``N_CLASSES`` a third, mixed class)."""
    rng = np.random.RandomState(seed)
    reviews, labels = [], []
    for _ in range(n):
        label = int(rng.randint(N_CLASSES if MODEL == "cnn_multiclass" else 2))
        lean = [NEGATIVE, POSITIVE, NEGATIVE + POSITIVE][label]
        words = [str(w) for w in rng.choice(NEUTRAL + lean, rng.randint(4, 9))]
        reviews.append(words)
        labels.append(label)
    return reviews, labels


def generate_bigrams(x):
    n_grams = set(zip(*[x[i:] for i in range(2)]))
    for n_gram in sorted(n_grams):  # sorted: a set's order is the process's string hash
        x.append(" ".join(n_gram))
    return x


class Vocab:
    """torchtext's ``TEXT.build_vocab``: ``<unk>`` 0, ``<pad>`` 1, then words by frequency."""

    def __init__(self, texts):
        counts = collections.Counter(word for text in texts for word in text)
        self.itos = ["<unk>", "<pad>", *sorted(counts, key=lambda w: (-counts[w], w))]
        self.stoi = collections.defaultdict(int, {w: i for i, w in enumerate(self.itos)})

    def __len__(self):
        return len(self.itos)


def preprocess(reviews):
    return [generate_bigrams(list(r)) if MODEL == "fasttext" else list(r) for r in reviews]


TRAIN_TEXT = preprocess(corpus(6 * BATCH_SIZE, 0)[0])
TEXT = Vocab(TRAIN_TEXT)
INPUT_DIM = len(TEXT)
PAD_IDX = TEXT.stoi["<pad>"]
UNK_IDX = TEXT.stoi["<unk>"]


def iterator(seed, steps):
    """BucketIterator-like batches: ``text`` [sent len, batch], ``text_lengths`` (unsorted), ``label``."""
    reviews, labels = corpus(steps * BATCH_SIZE, seed)
    reviews = preprocess(reviews)
    for start in range(0, len(reviews), BATCH_SIZE):
        chunk = reviews[start : start + BATCH_SIZE]
        longest = max(max(len(r) for r in chunk), max(FILTER_SIZES) if MODEL.startswith("cnn") else 0)
        text = np.full((longest, len(chunk)), PAD_IDX)
        for b, review in enumerate(chunk):
            text[: len(review), b] = [TEXT.stoi[w] for w in review]
        label = labels[start : start + BATCH_SIZE]
        yield (  # BucketIterator(device=device) puts the lengths on the device too
            torch.tensor(text).to(device),
            torch.tensor([len(r) for r in chunk]).to(device),
            (torch.tensor(label) if MODEL == "cnn_multiclass" else torch.tensor(label, dtype=torch.float)).to(device),
        )


# ----------------------------------------------------------------------------------------- the models
class RNN(nn.Module):
    def __init__(self, input_dim, embedding_dim, hidden_dim, output_dim):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        self.rnn = nn.RNN(embedding_dim, hidden_dim)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, text):
        # text = [sent len, batch size]
        embedded = self.embedding(text)
        # embedded = [sent len, batch size, emb dim]
        output, hidden = self.rnn(embedded)
        # output = [sent len, batch size, hid dim]
        # hidden = [1, batch size, hid dim]
        assert torch.equal(output[-1, :, :], hidden.squeeze(0))
        return self.fc(hidden.squeeze(0))


class PackedRNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.rnn = nn.LSTM(embedding_dim, hidden_dim, num_layers=n_layers, bidirectional=bidirectional, dropout=dropout)
        self.fc = nn.Linear(hidden_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        # text = [sent len, batch size]
        embedded = self.dropout(self.embedding(text))
        # pack sequence
        # lengths need to be on CPU!
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to("cpu"), enforce_sorted=False)
        packed_output, (hidden, cell) = self.rnn(packed_embedded)
        # unpack sequence
        output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)
        # output = [sent len, batch size, hid dim * num directions]
        # output over padding tokens are zero tensors
        # concat the final forward (hidden[-2,:,:]) and backward (hidden[-1,:,:]) hidden layers
        # and apply dropout
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        # hidden = [batch size, hid dim * num directions]
        self.last_output = output
        return self.fc(hidden)


class FastText(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.fc = nn.Linear(embedding_dim, output_dim)

    def forward(self, text):
        # text = [sent len, batch size]
        embedded = self.embedding(text)
        # embedded = [sent len, batch size, emb dim]
        embedded = embedded.permute(1, 0, 2)
        # embedded = [batch size, sent len, emb dim]
        pooled = F.avg_pool2d(embedded, (embedded.shape[1], 1)).squeeze(1)
        # pooled = [batch size, embedding_dim]
        return self.fc(pooled)


class CNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, n_filters, filter_sizes, output_dim, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.convs = nn.ModuleList(
            [nn.Conv2d(in_channels=1, out_channels=n_filters, kernel_size=(fs, embedding_dim)) for fs in filter_sizes]
        )
        self.fc = nn.Linear(len(filter_sizes) * n_filters, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text):
        # text = [batch size, sent len]
        embedded = self.embedding(text)
        # embedded = [batch size, sent len, emb dim]
        embedded = embedded.unsqueeze(1)
        # embedded = [batch size, 1, sent len, emb dim]
        conved = [F.relu(conv(embedded)).squeeze(3) for conv in self.convs]
        # conved_n = [batch size, n_filters, sent len - filter_sizes[n] + 1]
        pooled = [F.max_pool1d(conv, conv.shape[2]).squeeze(2) for conv in conved]
        # pooled_n = [batch size, n_filters]
        cat = self.dropout(torch.cat(pooled, dim=1))
        # cat = [batch size, n_filters * len(filter_sizes)]
        return self.fc(cat)


def build():
    return make_model().to(device)


def make_model():
    torch.manual_seed(0)
    if MODEL == "rnn":
        return RNN(INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, 1)
    if MODEL == "lstm_packed":
        return PackedRNN(INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, 1, 2, True, DROPOUT, PAD_IDX)
    if MODEL == "fasttext":
        return FastText(INPUT_DIM, EMBEDDING_DIM, 1, PAD_IDX)
    return CNN(INPUT_DIM, EMBEDDING_DIM, N_FILTERS, FILTER_SIZES, N_CLASSES if MODEL == "cnn_multiclass" else 1,
               DROPOUT, PAD_IDX)  # fmt: skip


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def binary_accuracy(preds, y):
    """
    Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8
    """
    # round predictions to the closest integer
    rounded_preds = torch.round(torch.sigmoid(preds))
    correct = (rounded_preds == y).float()  # convert into float for division
    acc = correct.sum() / len(correct)
    return acc


def categorical_accuracy(preds, y):
    """
    Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8
    """
    top_pred = preds.argmax(1, keepdim=True)
    correct = top_pred.eq(y.view_as(top_pred)).sum()
    acc = correct.float() / y.shape[0]
    return acc


def predictions_of(model, text, text_lengths):
    if MODEL == "lstm_packed":
        return model(text, text_lengths).squeeze(1)
    if MODEL.startswith("cnn"):
        text = text.permute(1, 0)  # the CNN notebooks' batch_first=True field
    predictions = model(text)
    return predictions if MODEL == "cnn_multiclass" else predictions.squeeze(1)


def predict_sentiment(model, sentence):
    model.eval()
    tokenized = sentence.split()
    indexed = [TEXT.stoi[t] for t in tokenized]
    length = [len(indexed)]
    tensor = torch.LongTensor(indexed).to(device)
    tensor = tensor.unsqueeze(1)
    length_tensor = torch.LongTensor(length)
    prediction = torch.sigmoid(model(tensor, length_tensor))
    return prediction.item()


def train(model, steps=3):
    record = {"count": f"The model has {count_parameters(model):,} trainable parameters", "losses": []}
    if MODEL == "lstm_packed":
        rng = np.random.RandomState(5)
        pretrained_embeddings = torch.tensor(rng.standard_normal((INPUT_DIM, EMBEDDING_DIM)).astype(np.float32))
        pretrained_embeddings = pretrained_embeddings.to(device)
        model.embedding.weight.data.copy_(pretrained_embeddings)
        model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)
        model.embedding.weight.data[PAD_IDX] = torch.zeros(EMBEDDING_DIM)
        record["embedding"] = model.embedding.weight.data[:3].tolist()
    optimizer = optim.SGD(model.parameters(), lr=1e-3) if MODEL == "rnn" else optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss() if MODEL == "cnn_multiclass" else nn.BCEWithLogitsLoss()
    criterion = criterion.to(device)
    accuracy = categorical_accuracy if MODEL == "cnn_multiclass" else binary_accuracy

    epoch_loss = 0
    epoch_acc = 0
    model.train()
    for text, text_lengths, label in iterator(1, steps):
        optimizer.zero_grad()
        predictions = predictions_of(model, text, text_lengths)
        loss = criterion(predictions, label)
        acc = accuracy(predictions, label)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
        epoch_acc += acc.item()
        record["losses"].append(loss.item())
    train_loss, train_acc = epoch_loss / steps, epoch_acc / steps
    record["line"] = f"\tTrain Loss: {train_loss:.3f} | Train Acc: {train_acc * 100:.2f}%"

    model.eval()
    with torch.no_grad():
        text, text_lengths, label = next(iterator(2, 1))
        predictions = predictions_of(model, text, text_lengths)
        record["valid"] = [criterion(predictions, label).item(), accuracy(predictions, label).item()]
        if MODEL == "lstm_packed":  # "output over padding tokens are zero tensors"
            padded = [model.last_output[n:, b] for b, n in enumerate(text_lengths.tolist())]
            record["padding_zero"] = [list(p.shape) + [bool((p == 0).all())] for p in padded]
    if MODEL == "lstm_packed":
        record["predict"] = [predict_sentiment(model, "this film is great"), predict_sentiment(model, "dull plot")]
    return record


if __name__ == "__main__":
    print(train(build()))
