"""The official tutorials "Deep Learning for NLP with PyTorch" (beginner_source/nlp/): the introduction to
PyTorch, deep learning with PyTorch (the bag-of-words classifier), word embeddings (the N-gram language
model) and sequence models (the LSTM part-of-speech tagger), on their own toy sentences. ``PART`` picks one
(the tagger by default); each prints what the tutorial prints, and the text is compared too.

Their idioms: ``torch.manual_seed(1)``; ``torch.tensor`` of nested lists, ``torch.randn((2, 3, 4))``,
``x.view(2, 12)`` and ``x.view(2, -1)``, ``torch.cat([x_1, y_1], 1)``, ``z.grad_fn``, ``requires_grad_()``,
``.detach()``, ``(x ** 2).requires_grad`` under ``torch.no_grad()``; ``nn.Linear(5, 3)`` on ``torch.randn(2,
5)``, ``F.relu``, ``F.softmax(data, dim=0)`` and ``F.log_softmax(data, dim=0)``; ``make_bow_vector`` by ``vec =
torch.zeros(len(word_to_ix))`` and ``vec[word_to_ix[word]] += 1`` then ``vec.view(1, -1)``, targets by
``torch.LongTensor([label_to_ix[label]])``, ``next(model.parameters())[:, word_to_ix["creo"]]``, log-probs
printed before and after training under ``torch.no_grad()``; ``nn.Embedding(2, 5)`` looked up by
``torch.tensor([word_to_ix["hello"]], dtype=torch.long)``; the N-gram model's ``self.embeddings(inputs).view((1,
-1))``, ``F.log_softmax(out, dim=1)``, ``total_loss += loss.item()`` and
``model.embeddings.weight[word_to_ix["beauty"]]``; ``nn.LSTM(3, 3)`` stepped over ``i.view(1, 1, -1)`` and
run at once over ``torch.cat(inputs).view(len(inputs), 1, -1)`` from ``(torch.randn(1, 1, 3), torch.randn(1,
1, 3))``; ``prepare_sequence`` and ``LSTMTagger`` (``lstm_out.view(len(sentence), -1)``); ``model.zero_grad()``
with ``optim.SGD(model.parameters(), lr=0.1)`` and ``nn.NLLLoss()``.
"""

from __future__ import annotations

from shim import F, nn, optim, torch

PART = "lstm"


def shown(value):
    """What ``print(value)`` writes, with the library's name as PyTorch's."""
    return str(value).replace("vkml", "torch")


# bag of words
data = [
    ("me gusta comer en la cafeteria".split(), "SPANISH"),
    ("Give it to me".split(), "ENGLISH"),
    ("No creo que sea una buena idea".split(), "SPANISH"),
    ("No it is not a good idea to get lost at sea".split(), "ENGLISH"),
]
test_data = [("Yo creo que si".split(), "SPANISH"), ("it is lost on me".split(), "ENGLISH")]
bow_word_to_ix = {}
for sent, _ in data + test_data:
    for word in sent:
        if word not in bow_word_to_ix:
            bow_word_to_ix[word] = len(bow_word_to_ix)
VOCAB_SIZE = len(bow_word_to_ix)
NUM_LABELS = 2
label_to_ix = {"SPANISH": 0, "ENGLISH": 1}


class BoWClassifier(nn.Module):  # inheriting from nn.Module!
    def __init__(self, num_labels, vocab_size):
        super(BoWClassifier, self).__init__()  # noqa: UP008
        self.linear = nn.Linear(vocab_size, num_labels)

    def forward(self, bow_vec):
        return F.log_softmax(self.linear(bow_vec), dim=1)


def make_bow_vector(sentence, word_to_ix):
    vec = torch.zeros(len(word_to_ix))
    for word in sentence:
        vec[word_to_ix[word]] += 1
    return vec.view(1, -1)


def make_target(label, label_to_ix):
    return torch.LongTensor([label_to_ix[label]])


# N-gram language model
CONTEXT_SIZE = 2
EMBEDDING_DIM = 10
test_sentence = """When forty winters shall besiege thy brow,
And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now,
Will be a totter'd weed of small worth held:""".split()
ngrams = [
    ([test_sentence[i - j - 1] for j in range(CONTEXT_SIZE)], test_sentence[i])
    for i in range(CONTEXT_SIZE, len(test_sentence))
]
vocab = sorted(set(test_sentence))  # the tutorial's set, in a fixed order
ngram_word_to_ix = {word: i for i, word in enumerate(vocab)}


class NGramLanguageModeler(nn.Module):
    def __init__(self, vocab_size, embedding_dim, context_size):
        super(NGramLanguageModeler, self).__init__()  # noqa: UP008
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, 128)
        self.linear2 = nn.Linear(128, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        log_probs = F.log_softmax(out, dim=1)
        return log_probs


# LSTM tagger
def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


training_data = [
    # Tags are: DET - determiner; NN - noun; V - verb
    # For example, the word "The" is a determiner
    ("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("Everybody read that book".split(), ["NN", "V", "DET", "NN"]),
]
tag_word_to_ix = {}
# For each words-list (sentence) and tags-list in each tuple of training_data
for sent, _tags in training_data:
    for word in sent:
        if word not in tag_word_to_ix:  # word has not been assigned an index yet
            tag_word_to_ix[word] = len(tag_word_to_ix)  # Assign each word with a unique index
tag_to_ix = {"DET": 0, "NN": 1, "V": 2}  # Assign each tag with a unique index
EMBEDDING_DIM_TAGGER = 6
HIDDEN_DIM = 6


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()  # noqa: UP008
        self.hidden_dim = hidden_dim

        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)

        # The LSTM takes word embeddings as inputs, and outputs hidden states
        # with dimensionality hidden_dim.
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)

        # The linear layer that maps from hidden state space to tag space
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores


def build():
    torch.manual_seed(1)
    if PART == "bow":
        return BoWClassifier(NUM_LABELS, VOCAB_SIZE)
    if PART == "ngram":
        return NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
    return LSTMTagger(EMBEDDING_DIM_TAGGER, HIDDEN_DIM, len(tag_word_to_ix), len(tag_to_ix))


def intro():
    printed = []
    V_data = [1.0, 2.0, 3.0]
    V = torch.tensor(V_data)
    M_data = [[1.0, 2.0, 3.0], [4.0, 5.0, 6]]
    M = torch.tensor(M_data)
    T_data = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]
    T = torch.tensor(T_data)
    printed += [shown(V), shown(M), shown(T), shown(V[0]), shown(V[0].item()), shown(M[0]), shown(T[0])]
    x = torch.randn((3, 4, 5))
    printed.append(shown(x[0]))
    x = torch.tensor([1.0, 2.0, 3])
    y = torch.tensor([4.0, 5.0, 6])
    z = x + y
    printed.append(shown(z))
    x_1 = torch.randn(2, 5)
    y_1 = torch.randn(3, 5)
    z_1 = torch.cat([x_1, y_1])
    x_2 = torch.randn(2, 3)
    y_2 = torch.randn(2, 5)
    z_2 = torch.cat([x_2, y_2], 1)
    printed += [shown(z_1), shown(z_2)]
    x = torch.randn(2, 3, 4)
    printed += [shown(x.view(2, 12)), shown(x.view(2, -1))]
    x = torch.tensor([1.0, 2.0, 3], requires_grad=True)
    y = torch.tensor([4.0, 5.0, 6], requires_grad=True)
    z = x + y
    printed += [shown(z), shown(z.grad_fn).split(" object")[0]]
    s = z.sum()
    printed += [shown(s), shown(s.grad_fn).split(" object")[0]]
    s.backward()
    printed.append(shown(x.grad))
    x = torch.randn(2, 2)
    y = torch.randn(2, 2)
    printed.append(shown([x.requires_grad, y.requires_grad]))
    z = x + y
    printed.append(shown(z.grad_fn))
    x = x.requires_grad_()
    y = y.requires_grad_()
    z = x + y
    printed.append(shown(z.grad_fn).split(" object")[0])
    printed.append(shown(z.requires_grad))
    new_z = z.detach()
    printed.append(shown(new_z.grad_fn))
    printed.append(shown(x.requires_grad))
    printed.append(shown((x**2).requires_grad))
    with torch.no_grad():
        printed.append(shown((x**2).requires_grad))
    lin = nn.Linear(5, 3)  # maps from R^5 to R^3, parameters A, b
    data = torch.randn(2, 5)
    printed.append(shown(lin(data)))
    data = torch.randn(2, 2)
    printed += [shown(data), shown(F.relu(data))]
    data = torch.randn(5)
    # the sum prints as tensor(1.) or tensor(1.0000) by its last bit, which PyTorch's own exp decides: a number here
    printed += [shown(data), shown(F.softmax(data, dim=0)), F.softmax(data, dim=0).sum().item()]
    printed.append(shown(F.log_softmax(data, dim=0)))
    word_to_ix = {"hello": 0, "world": 1}
    embeds = nn.Embedding(2, 5)  # 2 words in vocab, 5 dimensional embeddings
    lookup_tensor = torch.tensor([word_to_ix["hello"]], dtype=torch.long)
    hello_embed = embeds(lookup_tensor)
    printed.append(shown(hello_embed))
    return printed


def train(model, steps=3):
    printed = intro()
    losses = []
    if PART == "bow":
        with torch.no_grad():
            sample = data[0]
            bow_vector = make_bow_vector(sample[0], bow_word_to_ix)
            log_probs = model(bow_vector)
            printed.append(shown(log_probs))
        with torch.no_grad():
            for instance, _label in test_data:
                bow_vec = make_bow_vector(instance, bow_word_to_ix)
                log_probs = model(bow_vec)
                printed.append(shown(log_probs))
        # Print the matrix column corresponding to "creo"
        printed.append(shown(next(model.parameters())[:, bow_word_to_ix["creo"]]))
        loss_function = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        while len(losses) < steps:
            for instance, label in data:
                model.zero_grad()
                bow_vec = make_bow_vector(instance, bow_word_to_ix)
                target = make_target(label, label_to_ix)
                log_probs = model(bow_vec)
                loss = loss_function(log_probs, target)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        with torch.no_grad():
            for instance, _label in test_data:
                bow_vec = make_bow_vector(instance, bow_word_to_ix)
                log_probs = model(bow_vec)
                printed.append(shown(log_probs))
        printed.append(shown(next(model.parameters())[:, bow_word_to_ix["creo"]]))
    elif PART == "ngram":
        epoch_losses = []
        loss_function = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=0.01)
        for _epoch in range(2):
            total_loss = 0
            for context, target in ngrams[: steps + 1]:
                context_idxs = torch.tensor([ngram_word_to_ix[w] for w in context], dtype=torch.long)
                model.zero_grad()
                log_probs = model(context_idxs)
                loss = loss_function(log_probs, torch.tensor([ngram_word_to_ix[target]], dtype=torch.long))
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
                losses.append(loss.item())
            epoch_losses.append(total_loss)
        printed.append(epoch_losses)
        printed.append(shown(model.embeddings.weight[ngram_word_to_ix["beauty's"]]))
    else:
        lstm = nn.LSTM(3, 3)  # Input dim is 3, output dim is 3
        inputs = [torch.randn(1, 3) for _ in range(5)]  # make a sequence of length 5
        hidden = (torch.randn(1, 1, 3), torch.randn(1, 1, 3))
        for i in inputs:
            # Step through the sequence one element at a time.
            out, hidden = lstm(i.view(1, 1, -1), hidden)
        inputs = torch.cat(inputs).view(len(inputs), 1, -1)
        hidden = (torch.randn(1, 1, 3), torch.randn(1, 1, 3))  # clean out hidden state
        out, hidden = lstm(inputs, hidden)
        # the numbers, not the text: PyTorch names the output's grad_fn by its CPU kernel (MkldnnRnnLayerBackward0)
        printed += [shown(lstm), out.tolist(), [state.tolist() for state in hidden]]
        loss_function = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        with torch.no_grad():
            inputs = prepare_sequence(training_data[0][0], tag_word_to_ix)
            tag_scores = model(inputs)
            printed.append(shown(tag_scores))
        while len(losses) < steps:
            for sentence, tags in training_data:
                model.zero_grad()
                sentence_in = prepare_sequence(sentence, tag_word_to_ix)
                targets = prepare_sequence(tags, tag_to_ix)
                tag_scores = model(sentence_in)
                loss = loss_function(tag_scores, targets)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        with torch.no_grad():
            inputs = prepare_sequence(training_data[0][0], tag_word_to_ix)
            tag_scores = model(inputs)
            printed.append(shown(tag_scores))
    return {"losses": losses[:steps], "printed": printed}


if __name__ == "__main__":
    for PART in ("bow", "ngram", "lstm"):
        print(PART, *train(build())["printed"], sep="\n")
