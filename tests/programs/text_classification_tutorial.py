"""The official tutorial "Text classification with the torchtext library"
(beginner_source/text_sentiment_ngrams_tutorial.py), at a tiny size on made-up news lines in place of
AG_NEWS (labels 1 to 4 as AG_NEWS gives them).

Its idioms: ``text_pipeline = lambda x: vocab(tokenizer(x))`` and ``label_pipeline = lambda x: int(x) - 1``;
``collate_batch`` building ``offsets = [0]`` with ``offsets.append(processed_text.size(0))``, then
``torch.tensor(label_list, dtype=torch.int64)``, ``torch.tensor(offsets[:-1]).cumsum(dim=0)`` and
``torch.cat(text_list)``, each ``.to(device)``; ``TextClassificationModel`` with ``nn.EmbeddingBag(vocab_size,
embed_dim, sparse=False)`` (mode mean) called as ``self.embedding(text, offsets)``, ``init_weights`` by
``uniform_(-initrange, initrange)`` and ``bias.data.zero_()``; ``train`` with ``total_acc, total_count = 0, 0``,
``torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)``, ``total_acc += (predicted_label.argmax(1) ==
label).sum().item()`` and ``label.size(0)``; ``evaluate`` under ``torch.no_grad()``; SGD at lr 5 with
``torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)`` stepped only when the validation accuracy
falls (``if total_accu is not None and total_accu > accu_val``); ``to_map_style_dataset`` (a list here) split by
``torch.utils.data.dataset.random_split(train_dataset, [num_train, len(train_dataset) - num_train])`` after a
``torch.manual_seed``; ``DataLoader(..., shuffle=True, collate_fn=collate_batch)``; and ``predict`` by
``output = model(text, torch.tensor([0]))`` and ``output.argmax(1).item() + 1`` after ``model.to("cpu")``.
"""

from __future__ import annotations

from shim import DataLoader, nn, torch

SHUFFLE = True
device = "cpu"
BATCH_SIZE = 4  # batch size for training
LR = 5  # learning rate
EPOCHS = 3

topics = {
    1: ["election", "minister", "parliament", "vote", "treaty"],
    2: ["match", "goal", "season", "coach", "league"],
    3: ["market", "shares", "profit", "bank", "trade"],
    4: ["software", "chip", "internet", "phone", "robot"],
}
fillers = ["the", "a", "new", "big", "after", "in", "report", "says"]


def make_lines(n, offset):
    lines = []
    for i in range(n):
        label = 1 + (i + offset) % 4
        words = topics[label]
        text = " ".join(
            [fillers[(i * 3) % 8], words[i % 5], fillers[(i + offset) % 8], words[(i * 2 + offset) % 5], "."]
        )
        lines.append((label, text.title() if i % 3 == 0 else text))
    return lines


train_iter = make_lines(20, 0)
test_iter = make_lines(8, 1)


def tokenizer(text):
    """torchtext's ``get_tokenizer("basic_english")``: lower case, punctuation split off."""
    return text.lower().replace(".", " . ").split()


class Vocab:
    """``build_vocab_from_iterator(yield_tokens(train_iter), specials=["<unk>"])`` with ``set_default_index``."""

    def __init__(self, iterator, specials):
        counts = {}
        for tokens in iterator:
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
        self.itos = specials + sorted(counts, key=lambda t: (-counts[t], t))
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.default_index = None

    def set_default_index(self, index):
        self.default_index = index

    def __getitem__(self, token):
        return self.stoi.get(token, self.default_index)

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self[token] for token in tokens]


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


vocab = Vocab(yield_tokens(train_iter), specials=["<unk>"])
vocab.set_default_index(vocab["<unk>"])
text_pipeline = lambda x: vocab(tokenizer(x))  # noqa: E731
label_pipeline = lambda x: int(x) - 1  # noqa: E731


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


num_class = len({label for (label, text) in train_iter})
vocab_size = len(vocab)
emsize = 16


def build():
    torch.manual_seed(0)
    return TextClassificationModel(vocab_size, emsize, num_class).to(device)


def train(model, steps=3):
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    torch.manual_seed(1)
    train_dataset = list(train_iter)  # to_map_style_dataset
    test_dataset = list(test_iter)
    num_train = int(len(train_dataset) * 0.8)
    split_train_, split_valid_ = torch.utils.data.dataset.random_split(
        train_dataset, [num_train, len(train_dataset) - num_train]
    )
    train_dataloader = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=SHUFFLE, collate_fn=collate_batch)
    valid_dataloader = DataLoader(split_valid_, batch_size=BATCH_SIZE, shuffle=SHUFFLE, collate_fn=collate_batch)
    test_dataloader = DataLoader(test_dataset, batch_size=BATCH_SIZE, shuffle=SHUFFLE, collate_fn=collate_batch)
    losses, accuracies = [], []

    def train_epoch(dataloader):
        model.train()
        total_acc, total_count = 0, 0

        for idx, (label, text, offsets) in enumerate(dataloader):  # noqa: B007
            if len(losses) == steps:
                break
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
        return idx, total_acc / max(total_count, 1)

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count = 0, 0

        with torch.no_grad():
            for idx, (label, text, offsets) in enumerate(dataloader):  # noqa: B007
                predicted_label = model(text, offsets)
                loss = criterion(predicted_label, label)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count, loss.item()

    for epoch in range(1, EPOCHS + 1):
        train_epoch(train_dataloader)
        accu_val, val_loss = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        accuracies.append([epoch, accu_val, val_loss, scheduler.get_last_lr()[0]])
    accu_test = evaluate(test_dataloader)

    ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}

    def predict(text, text_pipeline):
        with torch.no_grad():
            text = torch.tensor(text_pipeline(text))
            output = model(text, torch.tensor([0]))
            return output.argmax(1).item() + 1, output.tolist()

    model = model.to("cpu")
    label, output = predict("The coach says the league season is new and the goal counts", text_pipeline)
    return {
        "losses": losses,
        "accuracies": accuracies,
        "test": accu_test,
        "predicted": [ag_news_label[label], output],
        "split": [len(split_train_), len(split_valid_), num_class, vocab_size],
    }


if __name__ == "__main__":
    print(train(build(), steps=15))
