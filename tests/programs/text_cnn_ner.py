"""Text classification by convolutions and named-entity recognition by a token-classification head, written
the way Shawn1993/cnn-text-classification-pytorch (Kim's CNN), srviest/char-cnn-text-classification-pytorch
(Zhang's character CNN) and Hugging Face's ``run_ner.py`` / ``BertForTokenClassification`` write them.

Idioms (``TASK``): Kim's CNN (``"kim"``) embeds words, ``x.unsqueeze(1)``, runs an ``nn.ModuleList`` of
``nn.Conv2d(1, Co, (K, D))`` as ``[F.relu(conv(x)).squeeze(3) for conv in self.convs]``, pools by
``F.max_pool1d(i, i.size(2)).squeeze(2)``, ``torch.cat(x, 1)``; a static embedding (``weight.requires_grad =
False``) beside a trained one as two channels; torchtext batches ``feature.t_()`` and ``target.sub_(1)``;
``(torch.max(logit, 1)[1].view(target.size()).data == target.data).sum()``; the max-norm constraint by
``fc.weight.data.renorm_(2, 0, max_norm)``. The character CNN (``"char"``): one-hot quantisation by
``X[alphabet.index(char)][index_char] = 1.0`` into ``torch.zeros``, ``nn.Sequential`` of ``Conv1d``, ``ReLU``,
``MaxPool1d(kernel_size=3, stride=3)``, max over time by ``torch.max(x, dim=2)[0]``, ``_create_weights`` by
``module.weight.data.normal_(mean, std)`` over ``self.modules()``, SGD with momentum and ``clip_grad_norm_``.
The token classifier (``"ner"``): ``tokenize_and_align_labels`` by ``word_ids`` (-100 on special tokens and
on every sub-word but the first, or the ``I-`` label with ``label_all_tokens``),
``DataCollatorForTokenClassification`` padding labels with -100, an encoder under ``src_key_padding_mask``,
the head's ``CrossEntropyLoss()`` over ``logits.view(-1, num_labels)`` or the older ``active_loss``
(``torch.where(active_loss, labels.view(-1), torch.tensor(loss_fct.ignore_index).type_as(labels))``), and
seqeval's entity-level precision, recall and F1 of ``argmax(-1).tolist()`` predictions with the -100
positions dropped.
"""

from __future__ import annotations

from shim import F, nn, optim, torch

TASK = "kim"  # or "char", "ner"
ACTIVE_LOSS = False
LABEL_ALL_TOKENS = False
DROPOUT = 0.5
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "park", "good", "bad", "very", "not", "paris", "anna", "met"]
ALPHABET = "abcdefghijklmnopqrstuvwxyz "
LABEL_LIST = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CLASSES = 2


class CNN_Text(nn.Module):  # noqa: N801 (the repository's name)
    def __init__(self, embed_num, embed_dim, class_num, kernel_num, kernel_sizes, dropout, multichannel=True):
        super().__init__()
        V, D, C, Co, Ks = embed_num, embed_dim, class_num, kernel_num, kernel_sizes
        Ci = 2 if multichannel else 1
        self.multichannel = multichannel
        self.embed = nn.Embedding(V, D)
        if multichannel:
            self.embed_static = nn.Embedding(V, D)
            self.embed_static.weight.requires_grad = False
        self.convs = nn.ModuleList([nn.Conv2d(Ci, Co, (K, D)) for K in Ks])
        self.dropout = nn.Dropout(dropout)
        self.fc1 = nn.Linear(len(Ks) * Co, C)

    def forward(self, x):
        if self.multichannel:
            x = torch.stack([self.embed(x), self.embed_static(x)], dim=1)  # (N, Ci, W, D)
        else:
            x = self.embed(x)  # (N, W, D)
            x = x.unsqueeze(1)  # (N, Ci, W, D)
        x = [F.relu(conv(x)).squeeze(3) for conv in self.convs]  # [(N, Co, W), ...]*len(Ks)
        x = [F.max_pool1d(i, i.size(2)).squeeze(2) for i in x]  # [(N, Co), ...]*len(Ks)
        x = torch.cat(x, 1)
        x = self.dropout(x)  # (N, len(Ks)*Co)
        logit = self.fc1(x)  # (N, C)
        return logit


class CharCNN(nn.Module):
    def __init__(self, num_features, num_classes, dropout):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.Conv1d(num_features, 12, kernel_size=5, stride=1), nn.ReLU(), nn.MaxPool1d(kernel_size=3, stride=3)
        )
        self.conv2 = nn.Sequential(nn.Conv1d(12, 12, kernel_size=3, stride=1), nn.ReLU())
        self.fc1 = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(p=dropout))
        self.fc2 = nn.Linear(16, num_classes)
        self._create_weights(mean=0.0, std=0.05)

    def _create_weights(self, mean=0.0, std=0.05):
        for module in self.modules():
            if isinstance(module, nn.Conv1d) or isinstance(module, nn.Linear):
                module.weight.data.normal_(mean, std)

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        # max over time
        x = torch.max(x, dim=2)[0]
        x = self.fc1(x)
        x = self.fc2(x)
        return x


class TokenClassifier(nn.Module):
    def __init__(self, vocab_size, hidden, num_labels, dropout):
        super().__init__()
        self.num_labels = num_labels
        self.embeddings = nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(24, hidden)
        layer = nn.TransformerEncoderLayer(hidden, 2, 2 * hidden, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, attention_mask=None, labels=None):
        positions = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        hidden = self.embeddings(input_ids) + self.position_embeddings(positions)
        sequence_output = self.encoder(hidden, src_key_padding_mask=attention_mask == 0)
        sequence_output = self.dropout(sequence_output)
        logits = self.classifier(sequence_output)
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()
            if ACTIVE_LOSS:
                # Only keep active parts of the loss
                active_loss = attention_mask.view(-1) == 1
                active_logits = logits.view(-1, self.num_labels)
                active_labels = torch.where(
                    active_loss, labels.view(-1), torch.tensor(loss_fct.ignore_index).type_as(labels)
                )
                loss = loss_fct(active_logits, active_labels)
            else:
                loss = loss_fct(logits.view(-1, self.num_labels), labels.view(-1))
        return loss, logits


# ------------------------------------------------------------------ data


def sentences(step, n=4):
    rows = []
    for i in range(n):
        k = 3 * step + i
        words = [WORDS[(k * 5 + j * 7) % len(WORDS)] for j in range(4 + k % 3)]
        rows.append((words, int(("good" in words) != ("not" in words))))
    return rows


def word_batch(step):
    """A torchtext ``BucketIterator`` batch: (seq_len, batch) with labels counted from 1."""
    rows = sentences(step)
    width = max(len(words) for words, _ in rows) + 2
    feature = torch.tensor([[2 + WORDS.index(w) for w in words] + [1] * (width - len(words)) for words, _ in rows])
    return feature.t().contiguous(), torch.tensor([label + 1 for _, label in rows])


def quantize(text, l0=16):
    X = torch.zeros(len(ALPHABET), l0)
    for index_char, char in enumerate(text[::-1][:l0]):
        if ALPHABET.find(char) != -1:
            X[ALPHABET.index(char)][index_char] = 1.0
    return X


def char_batch(step):
    rows = sentences(step)
    return torch.stack([quantize(" ".join(words)) for words, _ in rows]), torch.tensor([label for _, label in rows])


def ner_examples(step):
    """Words with BIO tags; a word's sub-words are its halves, as a WordPiece tokenizer splits long words."""
    examples = []
    for i in range(4):
        k = step + i
        tokens = ["anna", "met", WORDS[(k * 3) % 8], "in", "paris"][: 3 + k % 3] + (["park"] if k % 2 else [])
        tags = [1, 0, 0, 0, 3, 4][: len(tokens)]
        examples.append({"tokens": tokens, "ner_tags": tags})
    return examples


def word_ids_of(words):
    """(ids, word_ids): [CLS] sub-words [SEP], a long word split in two, as ``BatchEncoding.word_ids()``."""
    ids, word_ids = [1], [None]
    for index, word in enumerate(words):
        pieces = [word[:3], word[3:]] if len(word) > 3 else [word]
        for piece in pieces:
            ids.append(3 + sum(map(ord, piece)) % 37)
            word_ids.append(index)
    return ids + [2], word_ids + [None]


def tokenize_and_align_labels(examples, label_all_tokens=False):
    tokenized_inputs = {"input_ids": [], "labels": []}
    b_to_i_label = [LABEL_LIST.index(label.replace("B-", "I-")) for label in LABEL_LIST]
    for words, label in zip(examples["tokens"], examples["ner_tags"]):
        input_ids, word_ids = word_ids_of(words)
        previous_word_idx = None
        label_ids = []
        for word_idx in word_ids:
            # Special tokens have a word id that is None. We set the label to -100 so they are automatically
            # ignored in the loss function.
            if word_idx is None:
                label_ids.append(-100)
            # We set the label for the first token of each word.
            elif word_idx != previous_word_idx:
                label_ids.append(label[word_idx])
            # For the other tokens in a word, we set the label to either the current label or -100, depending on
            # the label_all_tokens flag.
            else:
                label_ids.append(b_to_i_label[label[word_idx]] if label_all_tokens else -100)
            previous_word_idx = word_idx
        tokenized_inputs["input_ids"].append(input_ids)
        tokenized_inputs["labels"].append(label_ids)
    return tokenized_inputs


class DataCollatorForTokenClassification:
    label_pad_token_id = -100

    def __call__(self, features):
        label_name = "label" if "label" in features[0].keys() else "labels"
        labels = [feature[label_name] for feature in features] if label_name in features[0].keys() else None
        sequence_length = max(len(feature["input_ids"]) for feature in features)
        batch = {
            "input_ids": [f["input_ids"] + [0] * (sequence_length - len(f["input_ids"])) for f in features],
            "attention_mask": [
                [1] * len(f["input_ids"]) + [0] * (sequence_length - len(f["input_ids"])) for f in features
            ],
        }
        batch[label_name] = [
            list(label) + [self.label_pad_token_id] * (sequence_length - len(label)) for label in labels
        ]
        return {k: torch.tensor(v, dtype=torch.int64) for k, v in batch.items()}


def ner_batch(step):
    examples = ner_examples(step)
    columns = {"tokens": [e["tokens"] for e in examples], "ner_tags": [e["ner_tags"] for e in examples]}
    tokenized = tokenize_and_align_labels(columns, label_all_tokens=LABEL_ALL_TOKENS)
    features = [dict(zip(tokenized, values)) for values in zip(*tokenized.values())]
    return DataCollatorForTokenClassification()(features)


def get_entities(seq):
    """seqeval's chunks of a BIO sequence: (type, begin, end)."""
    chunks, chunk_type, begin = [], None, None
    for i, tag in enumerate(list(seq) + ["O"]):
        prefix, _, kind = tag.partition("-")
        if chunk_type is not None and (prefix != "I" or kind != chunk_type):
            chunks.append((chunk_type, begin, i - 1))
            chunk_type = None
        if prefix == "B" or (prefix == "I" and chunk_type is None):
            chunk_type, begin = kind, i
    return chunks


def compute_metrics(predictions, labels):
    true_predictions = [
        [LABEL_LIST[p] for (p, lab) in zip(prediction, label) if lab != -100]
        for prediction, label in zip(predictions, labels)
    ]
    true_labels = [
        [LABEL_LIST[lab] for (p, lab) in zip(prediction, label) if lab != -100]
        for prediction, label in zip(predictions, labels)
    ]
    true_entities = {(i, *e) for i, seq in enumerate(true_labels) for e in get_entities(seq)}
    pred_entities = {(i, *e) for i, seq in enumerate(true_predictions) for e in get_entities(seq)}
    nb_correct = len(true_entities & pred_entities)
    precision = nb_correct / len(pred_entities) if pred_entities else 0.0
    recall = nb_correct / len(true_entities) if true_entities else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


# ------------------------------------------------------------------ training


def build():
    torch.manual_seed(0)
    if TASK == "kim":
        return CNN_Text(len(WORDS) + 2, 8, CLASSES, 4, [2, 3], DROPOUT)
    if TASK == "char":
        return CharCNN(len(ALPHABET), CLASSES, DROPOUT)
    return TokenClassifier(40, 16, len(LABEL_LIST), DROPOUT)


def train(model, steps=4):
    losses, metrics = [], []
    if TASK == "ner":
        optimizer = optim.AdamW(model.parameters(), lr=5e-3)
    elif TASK == "char":
        optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    else:
        optimizer = optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-2)
    model.train()
    for step in range(steps):
        optimizer.zero_grad()
        if TASK == "kim":
            feature, target = word_batch(step)
            feature.t_(), target.sub_(1)  # batch first, index align
            logit = model(feature)
            loss = F.cross_entropy(logit, target)
            loss.backward()
            optimizer.step()
            model.fc1.weight.data.renorm_(2, 0, 3.0)
            corrects = (torch.max(logit, 1)[1].view(target.size()).data == target.data).sum()
            metrics.append(100.0 * corrects.item() / feature.size(0))
        elif TASK == "char":
            inputs, target = char_batch(step)
            logit = model(inputs)
            loss = F.nll_loss(F.log_softmax(logit, dim=1), target)
            loss.backward()
            metrics.append(nn.utils.clip_grad_norm_(model.parameters(), 400).item())
            optimizer.step()
        else:
            batch = ner_batch(step)
            loss, _ = model(**batch)
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        if TASK == "ner":
            batch = ner_batch(steps)
            _, logits = model(**batch)
            predictions = logits.argmax(-1).tolist()
            result = compute_metrics(predictions, batch["labels"].tolist())
            result["predictions"] = predictions
        elif TASK == "kim":
            feature, target = word_batch(steps)
            logit = model(feature.t())
            result = {"probabilities": F.softmax(logit, dim=1).flatten().tolist()}
        else:
            inputs, _ = char_batch(steps)
            result = {"probabilities": F.softmax(model(inputs), dim=1).flatten().tolist()}
    return {"losses": losses, "metrics": metrics, **result}


if __name__ == "__main__":
    print(train(build(), steps=30))
