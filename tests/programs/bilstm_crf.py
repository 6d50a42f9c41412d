"""A BiLSTM-CRF part-of-speech style tagger, written as the official tutorial "Advanced: Making Dynamic
Decisions and the Bi-LSTM CRF" writes it, on a handful of toy sentences.

Its idioms: ``torch.tensor`` of a Python list of word ids (``dtype=torch.long``); a transitions matrix as
``nn.Parameter(torch.randn(n, n))`` whose START row and STOP column are set through ``.data[...] =
-10000``; a hidden state made fresh for every sentence (``torch.randn(2, 1, h // 2)``, zeros when
``FIXED_NOISE``); ``lstm_out.view(len(sentence), hidden_dim)``; the forward algorithm over
``torch.full((1, n), -10000.0)`` with ``init_alphas[0][start] = 0.0``, one step per word by broadcasting
``forward_var + transitions + feat.view(n, 1)`` and a ``log_sum_exp`` whose max is taken with
``torch.max(vec, 1)`` and subtracted through ``view(-1, 1).expand``; the gold path score by indexing
``transitions[tags[i + 1], tags[i]]`` with 0-d tensors after ``torch.cat`` of a START tensor; Viterbi
decoding with ``torch.max(next_tag_var, 1)``, backpointers kept as Python lists from ``.tolist()``, a
path followed backwards, ``reverse()`` and ``pop()``; the per-sentence loop ``model.zero_grad()``,
``loss.backward()``, ``optim.SGD(..., weight_decay=1e-4)``; decoding under ``torch.no_grad()``."""

from __future__ import annotations

from shim import nn, optim, torch

FIXED_NOISE = False
DEVICE = "cpu"
START_TAG = "<START>"
STOP_TAG = "<STOP>"
EMBEDDING_DIM = 5
HIDDEN_DIM = 4

TRAINING_DATA = [
    (
        "the wall street journal reported today that apple corporation made money".split(),
        "B I I I O O O B I O O".split(),
    ),
    ("georgia tech is a university in georgia".split(), "B I O O O O B".split()),
    ("apple made money in georgia today".split(), "B O O O B O".split()),
]


def argmax(vec):
    _, idx = torch.max(vec, 1)
    return idx.item()


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


def log_sum_exp(vec):
    """Row-wise log-sum-exp of a (rows, n) tensor, shifted by each row's max for stability."""
    max_score, _ = torch.max(vec, 1)
    shifted = vec - max_score.view(-1, 1).expand(vec.size(0), vec.size(1))
    return max_score + torch.log(torch.sum(torch.exp(shifted), 1))


class BiLSTM_CRF(nn.Module):  # noqa: N801  (the tutorial's name)
    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.vocab_size = vocab_size
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        # transitions[i, j]: the score of moving from tag j to tag i
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000
        self.hidden = self.init_hidden()

    def init_hidden(self):
        shape = (2, 1, self.hidden_dim // 2)
        device = self.transitions.device
        if FIXED_NOISE:
            return (torch.zeros(*shape, device=device), torch.zeros(*shape, device=device))
        return (torch.randn(*shape, device=device), torch.randn(*shape, device=device))

    def _forward_alg(self, feats):
        init_alphas = torch.full((1, self.tagset_size), -10000.0, device=feats.device)
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.0
        forward_var = init_alphas
        for feat in feats:
            # next_tag_var[next, prev] = alpha[prev] + transition(prev -> next) + emission(next)
            next_tag_var = forward_var.expand(self.tagset_size, -1) + self.transitions + feat.view(-1, 1)
            forward_var = log_sum_exp(next_tag_var).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        return log_sum_exp(terminal_var)[0]

    def _get_lstm_features(self, sentence):
        self.hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, self.hidden = self.lstm(embeds, self.hidden)
        lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
        return self.hidden2tag(lstm_out)

    def _score_sentence(self, feats, tags):
        score = torch.zeros(1, device=feats.device)
        start = torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long, device=feats.device)
        tags = torch.cat([start, tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
        return score

    def _viterbi_decode(self, feats):
        backpointers = []
        init_vvars = torch.full((1, self.tagset_size), -10000.0, device=feats.device)
        init_vvars[0][self.tag_to_ix[START_TAG]] = 0
        forward_var = init_vvars
        for feat in feats:
            next_tag_var = forward_var.view(1, -1) + self.transitions
            viterbivars_t, bptrs_t = torch.max(next_tag_var, 1)
            backpointers.append(bptrs_t.tolist())
            forward_var = (viterbivars_t + feat).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return forward_score - gold_score

    def forward(self, sentence):
        lstm_feats = self._get_lstm_features(sentence)
        score, tag_seq = self._viterbi_decode(lstm_feats)
        return score, tag_seq


def vocabulary():
    word_to_ix = {}
    for sentence, _ in TRAINING_DATA:
        for word in sentence:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
    return word_to_ix, tag_to_ix


def build():
    torch.manual_seed(1)
    word_to_ix, tag_to_ix = vocabulary()
    return BiLSTM_CRF(len(word_to_ix), tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    word_to_ix, tag_to_ix = vocabulary()
    optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    record = {"losses": [], "paths": [], "scores": []}
    for step in range(steps):
        sentence, tags = TRAINING_DATA[step % len(TRAINING_DATA)]
        model.zero_grad()
        sentence_in = prepare_sequence(sentence, word_to_ix).to(device)
        targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long).to(device)
        loss = model.neg_log_likelihood(sentence_in, targets)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    with torch.no_grad():
        for sentence, _ in TRAINING_DATA:
            score, path = model(prepare_sequence(sentence, word_to_ix).to(device))
            record["scores"].append(score.item())
            record["paths"].append(path)
    record["transition_grad"] = model.transitions.grad.abs().sum().item()
    record["start_row"] = model.transitions[tag_to_ix[START_TAG]].tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
