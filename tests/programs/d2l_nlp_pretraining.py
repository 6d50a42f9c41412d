"""Dive into Deep Learning's natural language processing pretraining (PyTorch edition) at tiny sizes on a
synthetic corpus (no download): word2vec's skip-gram with negative sampling (subsampling, context windows,
negatives drawn by ``random.choices``, a ``collate_fn`` batching centers, contexts and masks), a GloVe-style
weighted least-squares loss, byte-pair-encoding merges, and BERT pretrained on masked language modeling and
next-sentence prediction.

Its idioms: ``subsample``'s ``random.uniform(0, 1) < math.sqrt(1e-4 / counter[token] * num_tokens)``;
``RandomGenerator``'s ``random.choices(self.population, self.sampling_weights, k=10000)``; ``batchify``'s
``torch.tensor(centers).reshape((-1, 1))`` and ``DataLoader(dataset, batch_size, shuffle=True,
collate_fn=batchify)`` over a ``Dataset`` subclass; ``skip_gram``'s ``torch.bmm(v, u.permute(0, 2, 1))``;
``SigmoidBCELoss``'s ``nn.functional.binary_cross_entropy_with_logits(inputs, target, weight=mask,
reduction="none")`` and ``loss(...) / mask.sum(axis=1) * mask.shape[1]``; ``get_similar_tokens``'s ``torch.mv(W, x)
/ torch.sqrt(torch.sum(W * W, dim=1) * torch.sum(x * x) + 1e-9)`` and ``torch.topk(cos, k=k+1)[1].cpu().numpy().astype(
'int32')``; GloVe's ``torch.clamp((X / x_max) ** 0.75, max=1)``; ``BERTEncoder``'s segment embedding and
``nn.Parameter(torch.randn(1, max_len, num_hiddens))`` sliced by ``self.pos_embedding[:, :X.shape[1], :]``;
``MaskLM``'s ``batch_idx = torch.repeat_interleave(torch.arange(0, batch_size), num_pred_positions)`` and
``masked_X = X[batch_idx, pred_positions]``; ``NextSentencePred`` on ``self.hidden(encoded_X[:, 0, :])``; the
dataset's ``torch.tensor(len(token_ids), dtype=torch.float32)`` valid lengths (float, through
``masked_softmax``) and ``_replace_mlm_tokens``'s ``random.shuffle``; and ``_get_batch_loss_bert``'s ``loss(
mlm_Y_hat.reshape(-1, vocab_size), mlm_Y.reshape(-1)) * mlm_weights_X.reshape(-1, 1)`` over ``mlm_weights_X.sum()
+ 1e-8``."""

from __future__ import annotations

import collections
import math
import random

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "word2vec"  # or "bert"
SHUFFLE = True
DROPOUT = 0.1

ANIMALS = ["cat", "dog", "bird", "fish", "horse"]
FOODS = ["apple", "bread", "rice", "cheese", "soup"]
PLACES = ["park", "house", "river", "school", "market"]


def read_corpus():
    """Sentences of a small grammar (the book's PTB and WikiText-2 stand-in), by Python's random."""
    rng = random.Random(0)
    sentences = []
    for _ in range(60):
        animal, food, place = rng.choice(ANIMALS), rng.choice(FOODS), rng.choice(PLACES)
        form = rng.randrange(3)
        if form == 0:
            sentences.append(["the", animal, "eats", food, "in", "the", place])
        elif form == 1:
            sentences.append(["a", animal, "runs", "to", "the", place])
        else:
            sentences.append(["we", "cook", food, "at", "the", place, "with", "a", animal])
    return sentences


class Vocab:
    """Vocabulary for text."""

    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        tokens = tokens or []
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
        self.idx_to_token = ["<unk>"] + (reserved_tokens or [])
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self.token_freqs:
            if freq >= min_freq and token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if not isinstance(indices, list | tuple):
            return self.idx_to_token[indices]
        return [self.idx_to_token[index] for index in indices]

    @property
    def unk(self):
        return 0


# ---- word2vec ----


def subsample(sentences, vocab):
    """Subsample high-frequency words."""
    # Exclude unknown tokens ('<unk>')
    sentences = [[token for token in line if vocab[token] != vocab.unk] for line in sentences]
    counter = collections.Counter([token for line in sentences for token in line])
    num_tokens = sum(counter.values())

    # Return True if `token` is kept during subsampling
    def keep(token):
        return random.uniform(0, 1) < math.sqrt(1e-2 / counter[token] * num_tokens)

    return ([[token for token in line if keep(token)] for line in sentences], counter)


def get_centers_and_contexts(corpus, max_window_size):
    """Return center words and context words in skip-gram."""
    centers, contexts = [], []
    for line in corpus:
        # To form a "center word--context word" pair, each sentence needs to have at least 2 words
        if len(line) < 2:
            continue
        centers += line
        for i in range(len(line)):  # Context window centered at `i`
            window_size = random.randint(1, max_window_size)
            indices = list(range(max(0, i - window_size), min(len(line), i + 1 + window_size)))
            # Exclude the center word from the context words
            indices.remove(i)
            contexts.append([line[idx] for idx in indices])
    return centers, contexts


class RandomGenerator:
    """Randomly draw among {1, ..., n} according to n sampling weights."""

    def __init__(self, sampling_weights):
        # Exclude
        self.population = list(range(1, len(sampling_weights) + 1))
        self.sampling_weights = sampling_weights
        self.candidates = []
        self.i = 0

    def draw(self):
        if self.i == len(self.candidates):
            # Cache `k` random sampling results
            self.candidates = random.choices(self.population, self.sampling_weights, k=10000)
            self.i = 0
        self.i += 1
        return self.candidates[self.i - 1]


def get_negatives(all_contexts, vocab, counter, K):
    """Return noise words in negative sampling."""
    # Sampling weights for words with indices 1, 2, ... (index 0 is the excluded unknown token) in the vocabulary
    sampling_weights = [counter[vocab.to_tokens(i)] ** 0.75 for i in range(1, len(vocab))]
    all_negatives, generator = [], RandomGenerator(sampling_weights)
    for contexts in all_contexts:
        negatives = []
        while len(negatives) < len(contexts) * K:
            neg = generator.draw()
            # Noise words cannot be context words
            if neg not in contexts:
                negatives.append(neg)
        all_negatives.append(negatives)
    return all_negatives


def batchify(data):
    """Return a minibatch of examples for skip-gram with negative sampling."""
    max_len = max(len(c) + len(n) for _, c, n in data)
    centers, contexts_negatives, masks, labels = [], [], [], []
    for center, context, negative in data:
        cur_len = len(context) + len(negative)
        centers += [center]
        contexts_negatives += [context + negative + [0] * (max_len - cur_len)]
        masks += [[1] * cur_len + [0] * (max_len - cur_len)]
        labels += [[1] * len(context) + [0] * (max_len - len(context))]
    return (torch.tensor(centers).reshape((-1, 1)), torch.tensor(contexts_negatives), torch.tensor(masks),
            torch.tensor(labels))  # fmt: skip


def load_data_ptb(batch_size, max_window_size, num_noise_words):
    """Load the corpus and return the data iterator and the vocabulary."""
    sentences = read_corpus()
    vocab = Vocab(sentences, min_freq=1)
    subsampled, counter = subsample(sentences, vocab)
    corpus = [vocab[line] for line in subsampled]
    all_centers, all_contexts = get_centers_and_contexts(corpus, max_window_size)
    all_negatives = get_negatives(all_contexts, vocab, counter, num_noise_words)

    class PTBDataset(data.Dataset):
        def __init__(self, centers, contexts, negatives):
            assert len(centers) == len(contexts) == len(negatives)
            self.centers = centers
            self.contexts = contexts
            self.negatives = negatives

        def __getitem__(self, index):
            return (self.centers[index], self.contexts[index], self.negatives[index])

        def __len__(self):
            return len(self.centers)

    dataset = PTBDataset(all_centers[:96], all_contexts[:96], all_negatives[:96])
    data_iter = data.DataLoader(dataset, batch_size, shuffle=SHUFFLE, collate_fn=batchify)
    return data_iter, vocab


def skip_gram(center, contexts_and_negatives, embed_v, embed_u):
    v = embed_v(center)
    u = embed_u(contexts_and_negatives)
    pred = torch.bmm(v, u.permute(0, 2, 1))
    return pred


class SigmoidBCELoss(nn.Module):
    # Binary cross-entropy loss with masking
    def __init__(self):
        super().__init__()

    def forward(self, inputs, target, mask=None):
        out = nn.functional.binary_cross_entropy_with_logits(inputs, target, weight=mask, reduction="none")
        return out.mean(dim=1)


def get_similar_tokens(query_token, k, embed, vocab):
    W = embed.weight.data
    x = W[vocab[query_token]]
    # Compute the cosine similarity. Add 1e-9 for numerical stability
    cos = torch.mv(W, x) / torch.sqrt(torch.sum(W * W, dim=1) * torch.sum(x * x) + 1e-9)
    topk = torch.topk(cos, k=k + 1)[1].cpu().numpy().astype("int32")
    return [[float(cos[i]), vocab.to_tokens(int(i))] for i in topk[1:]]  # Remove the input words


def glove(vocab, corpus_ids, steps, record):
    """A GloVe-style weighted least-squares fit of log co-occurrence counts (the book states the loss)."""
    V = len(vocab)
    counts = collections.defaultdict(float)  # co-occurrences within a window of 2, weighted by 1 / distance
    for line in corpus_ids:
        for i, center in enumerate(line):
            for j in range(max(0, i - 2), min(len(line), i + 3)):
                if j != i:
                    counts[center, line[j]] += 1.0 / abs(i - j)
    X = torch.tensor([[counts[i, j] for j in range(V)] for i in range(V)])
    h = torch.clamp((X / 10) ** 0.75, max=1)
    U = nn.Parameter(torch.randn(V, 4) * 0.1)
    Vc = nn.Parameter(torch.randn(V, 4) * 0.1)
    b, c = nn.Parameter(torch.zeros(V, 1)), nn.Parameter(torch.zeros(1, V))
    optimizer = torch.optim.Adagrad([U, Vc, b, c], lr=0.1)
    mask = X > 0
    losses = []
    for _ in range(steps * 3):
        optimizer.zero_grad()
        diff = U @ Vc.T + b + c - torch.log(torch.where(mask, X, torch.ones_like(X)))
        loss = (h * diff**2)[mask].sum()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    record["glove"] = [losses, int(mask.sum()), float(h.max())]


def bpe(record):
    symbols = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t",
               "u", "v", "w", "x", "y", "z", "_", "[UNK]"]  # fmt: skip
    raw_token_freqs = {"fast_": 4, "faster_": 3, "tall_": 5, "taller_": 4}
    token_freqs = {}
    for token, freq in raw_token_freqs.items():  # noqa: B007  (the book's loop)
        token_freqs[" ".join(list(token))] = raw_token_freqs[token]

    def get_max_freq_pair(token_freqs):
        pairs = collections.defaultdict(int)
        for token, freq in token_freqs.items():  # noqa: B007  (the book's loop)
            symbols = token.split()
            for i in range(len(symbols) - 1):
                # Key of `pairs` is a tuple of two consecutive symbols
                pairs[symbols[i], symbols[i + 1]] += freq
        return max(pairs, key=pairs.get)  # Key of `pairs` with the max value

    def merge_symbols(max_freq_pair, token_freqs, symbols):
        symbols.append("".join(max_freq_pair))
        new_token_freqs = dict()
        for token, freq in token_freqs.items():  # noqa: B007  (the book's loop)
            new_token = token.replace(" ".join(max_freq_pair), "".join(max_freq_pair))
            new_token_freqs[new_token] = token_freqs[token]
        return new_token_freqs

    for _ in range(10):
        max_freq_pair = get_max_freq_pair(token_freqs)
        token_freqs = merge_symbols(max_freq_pair, token_freqs, symbols)
    record["bpe"] = [list(token_freqs.keys()), symbols[28:]]


# ---- BERT ----


def get_tokens_and_segments(tokens_a, tokens_b=None):
    """Get tokens of the BERT input sequence and their segment IDs."""
    tokens = ["<cls>"] + tokens_a + ["<sep>"]
    # 0 and 1 are marking segment A and B, respectively
    segments = [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += tokens_b + ["<sep>"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""

    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        return self.W_o(self.transpose_output(output))

    def transpose_qkv(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


class AddNorm(nn.Module):
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class BERTEncoder(nn.Module):
    """BERT encoder."""

    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, max_len=1000, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.segment_embedding = nn.Embedding(2, num_hiddens)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"{i}", TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, True)
            )
        # In BERT, positional embeddings are learnable, thus we create a parameter of positional embeddings that
        # are long enough
        self.pos_embedding = nn.Parameter(torch.randn(1, max_len, num_hiddens))

    def forward(self, tokens, segments, valid_lens):
        # Shape of `X` remains unchanged in the following code snippet: (batch size, max sequence length,
        # `num_hiddens`)
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, : X.shape[1], :]
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X


class MaskLM(nn.Module):
    """The masked language model task of BERT."""

    def __init__(self, vocab_size, num_hiddens, **kwargs):
        super().__init__(**kwargs)
        self.mlp = nn.Sequential(nn.LazyLinear(num_hiddens), nn.ReLU(), nn.LayerNorm(num_hiddens),
                                 nn.LazyLinear(vocab_size))  # fmt: skip

    def forward(self, X, pred_positions):
        num_pred_positions = pred_positions.shape[1]
        pred_positions = pred_positions.reshape(-1)
        batch_size = X.shape[0]
        batch_idx = torch.arange(0, batch_size)
        # Suppose that `batch_size` = 2, `num_pred_positions` = 3, then `batch_idx` is `torch.tensor([0, 0, 0, 1,
        # 1, 1])`
        batch_idx = torch.repeat_interleave(batch_idx, num_pred_positions)
        masked_X = X[batch_idx, pred_positions]
        masked_X = masked_X.reshape((batch_size, num_pred_positions, -1))
        mlm_Y_hat = self.mlp(masked_X)
        return mlm_Y_hat


class NextSentencePred(nn.Module):
    """The next sentence prediction task of BERT."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.output = nn.LazyLinear(2)

    def forward(self, X):
        # `X` shape: (batch size, `num_hiddens`)
        return self.output(X)


class BERTModel(nn.Module):
    """The BERT model."""

    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, max_len=1000):
        super().__init__()
        self.encoder = BERTEncoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                                   max_len=max_len)  # fmt: skip
        self.hidden = nn.Sequential(nn.LazyLinear(num_hiddens), nn.Tanh())
        self.mlm = MaskLM(vocab_size, num_hiddens)
        self.nsp = NextSentencePred()

    def forward(self, tokens, segments, valid_lens=None, pred_positions=None):
        encoded_X = self.encoder(tokens, segments, valid_lens)
        if pred_positions is not None:
            mlm_Y_hat = self.mlm(encoded_X, pred_positions)
        else:
            mlm_Y_hat = None
        # The hidden layer of the MLP classifier for next sentence prediction. 0 is the index of the '<cls>' token
        nsp_Y_hat = self.nsp(self.hidden(encoded_X[:, 0, :]))
        return encoded_X, mlm_Y_hat, nsp_Y_hat


def _read_wiki():
    """Paragraphs of two or more sentences (the book's WikiText-2 stand-in)."""
    sentences = [" ".join(s) for s in read_corpus()]
    paragraphs = [sentences[k : k + 3] for k in range(0, len(sentences), 3)]
    random.shuffle(paragraphs)
    return paragraphs


def _get_next_sentence(sentence, next_sentence, paragraphs):
    if random.random() < 0.5:
        is_next = True
    else:
        # `paragraphs` is a list of lists of lists
        next_sentence = random.choice(random.choice(paragraphs))
        is_next = False
    return sentence, next_sentence, is_next


def _get_nsp_data_from_paragraph(paragraph, paragraphs, vocab, max_len):
    nsp_data_from_paragraph = []
    for i in range(len(paragraph) - 1):
        tokens_a, tokens_b, is_next = _get_next_sentence(paragraph[i], paragraph[i + 1], paragraphs)
        # Consider 1 '<cls>' token and 2 '<sep>' tokens
        if len(tokens_a) + len(tokens_b) + 3 > max_len:
            continue
        tokens, segments = get_tokens_and_segments(tokens_a, tokens_b)
        nsp_data_from_paragraph.append((tokens, segments, is_next))
    return nsp_data_from_paragraph


def _replace_mlm_tokens(tokens, candidate_pred_positions, num_mlm_preds, vocab):
    # For the input of a masked language model, make a new copy of tokens and replace some of them by '<mask>' or
    # random tokens
    mlm_input_tokens = [token for token in tokens]
    pred_positions_and_labels = []
    # Shuffle for getting 15% random tokens for prediction in the masked language modeling task
    random.shuffle(candidate_pred_positions)
    for mlm_pred_position in candidate_pred_positions:
        if len(pred_positions_and_labels) >= num_mlm_preds:
            break
        masked_token = None
        # 80% of the time: replace the word with the '<mask>' token
        if random.random() < 0.8:
            masked_token = "<mask>"
        else:
            # 10% of the time: keep the word unchanged
            if random.random() < 0.5:
                masked_token = tokens[mlm_pred_position]
            # 10% of the time: replace the word with a random word
            else:
                masked_token = random.choice(vocab.idx_to_token)
        mlm_input_tokens[mlm_pred_position] = masked_token
        pred_positions_and_labels.append((mlm_pred_position, tokens[mlm_pred_position]))
    return mlm_input_tokens, pred_positions_and_labels


def _get_mlm_data_from_tokens(tokens, vocab):
    candidate_pred_positions = []
    # `tokens` is a list of strings
    for i, token in enumerate(tokens):
        # Special tokens are not predicted in the masked language modeling task
        if token in ["<cls>", "<sep>"]:
            continue
        candidate_pred_positions.append(i)
    # 15% of random tokens are predicted in the masked language modeling task
    num_mlm_preds = max(1, round(len(tokens) * 0.15))
    mlm_input_tokens, pred_positions_and_labels = _replace_mlm_tokens(tokens, candidate_pred_positions,
                                                                      num_mlm_preds, vocab)  # fmt: skip
    pred_positions_and_labels = sorted(pred_positions_and_labels, key=lambda x: x[0])
    pred_positions = [v[0] for v in pred_positions_and_labels]
    mlm_pred_labels = [v[1] for v in pred_positions_and_labels]
    return vocab[mlm_input_tokens], pred_positions, vocab[mlm_pred_labels]


def _pad_bert_inputs(examples, max_len, vocab):
    max_num_mlm_preds = round(max_len * 0.15)
    all_token_ids, all_segments, valid_lens = [], [], []
    all_pred_positions, all_mlm_weights, all_mlm_labels = [], [], []
    nsp_labels = []
    for token_ids, pred_positions, mlm_pred_label_ids, segments, is_next in examples:
        all_token_ids.append(torch.tensor(token_ids + [vocab["<pad>"]] * (max_len - len(token_ids)), dtype=torch.long))
        all_segments.append(torch.tensor(segments + [0] * (max_len - len(segments)), dtype=torch.long))
        # `valid_lens` excludes count of '<pad>' tokens
        valid_lens.append(torch.tensor(len(token_ids), dtype=torch.float32))
        all_pred_positions.append(
            torch.tensor(pred_positions + [0] * (max_num_mlm_preds - len(pred_positions)), dtype=torch.long)
        )
        # Predictions of padded tokens will be filtered out in the loss via multiplication of 0 weights
        all_mlm_weights.append(
            torch.tensor(
                [1.0] * len(mlm_pred_label_ids) + [0.0] * (max_num_mlm_preds - len(pred_positions)), dtype=torch.float32
            )  # fmt: skip
        )
        all_mlm_labels.append(
            torch.tensor(mlm_pred_label_ids + [0] * (max_num_mlm_preds - len(mlm_pred_label_ids)), dtype=torch.long)
        )
        nsp_labels.append(torch.tensor(is_next, dtype=torch.long))
    return (all_token_ids, all_segments, valid_lens, all_pred_positions, all_mlm_weights, all_mlm_labels, nsp_labels)


class _WikiTextDataset(data.Dataset):
    def __init__(self, paragraphs, max_len):
        # Input `paragraphs[i]` is a list of sentence strings representing a paragraph; while output
        # `paragraphs[i]` is a list of sentences representing a paragraph, where each sentence is a list of tokens
        paragraphs = [[s.split() for s in paragraph] for paragraph in paragraphs]
        sentences = [sentence for paragraph in paragraphs for sentence in paragraph]
        self.vocab = Vocab(sentences, min_freq=1, reserved_tokens=["<pad>", "<mask>", "<cls>", "<sep>"])
        # Get data for the next sentence prediction task
        examples = []
        for paragraph in paragraphs:
            examples.extend(_get_nsp_data_from_paragraph(paragraph, paragraphs, self.vocab, max_len))
        # Get data for the masked language model task
        examples = [(_get_mlm_data_from_tokens(tokens, self.vocab) + (segments, is_next))
                    for tokens, segments, is_next in examples]  # fmt: skip
        # Pad inputs
        (self.all_token_ids, self.all_segments, self.valid_lens, self.all_pred_positions, self.all_mlm_weights,
         self.all_mlm_labels, self.nsp_labels) = _pad_bert_inputs(examples, max_len, self.vocab)  # fmt: skip

    def __getitem__(self, idx):
        return (self.all_token_ids[idx], self.all_segments[idx], self.valid_lens[idx], self.all_pred_positions[idx],
                self.all_mlm_weights[idx], self.all_mlm_labels[idx], self.nsp_labels[idx])  # fmt: skip

    def __len__(self):
        return len(self.all_token_ids)


def load_data_wiki(batch_size, max_len):
    """Load the WikiText-2 dataset."""
    random.seed(3)
    paragraphs = _read_wiki()
    train_set = _WikiTextDataset(paragraphs, max_len)
    train_iter = data.DataLoader(train_set, batch_size, shuffle=SHUFFLE)
    return train_iter, train_set.vocab


def _get_batch_loss_bert(net, loss, vocab_size, tokens_X, segments_X, valid_lens_x, pred_positions_X,
                         mlm_weights_X, mlm_Y, nsp_y):  # fmt: skip
    # Forward pass
    _, mlm_Y_hat, nsp_Y_hat = net(tokens_X, segments_X, valid_lens_x.reshape(-1), pred_positions_X)
    # Compute masked language model loss
    mlm_l = loss(mlm_Y_hat.reshape(-1, vocab_size), mlm_Y.reshape(-1)) * mlm_weights_X.reshape(-1, 1)
    mlm_l = mlm_l.sum() / (mlm_weights_X.sum() + 1e-8)
    # Compute next sentence prediction loss
    nsp_l = loss(nsp_Y_hat, nsp_y)
    l = mlm_l + nsp_l  # noqa: E741  (the book's name)
    return mlm_l, nsp_l, l


def get_bert_encoding(net, tokens_a, tokens_b, vocab):
    tokens, segments = get_tokens_and_segments(tokens_a, tokens_b)
    token_ids = torch.tensor(vocab[tokens]).unsqueeze(0)
    segments = torch.tensor(segments).unsqueeze(0)
    valid_len = torch.tensor(len(tokens)).unsqueeze(0)
    encoded_X, _, _ = net(token_ids, segments, valid_len)
    return encoded_X


def build():
    torch.manual_seed(0)
    if MODEL == "bert":
        train_iter, vocab = load_data_wiki(8, 24)
        net = BERTModel(len(vocab), num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=2, dropout=DROPOUT,
                        max_len=32)  # fmt: skip
        batch = next(iter(train_iter))
        net(batch[0], batch[1], batch[2].reshape(-1), batch[3])  # materialize the lazy layers
        return net
    random.seed(2)
    _, vocab = load_data_ptb(16, 2, 3)
    embed_size = 8
    return nn.Sequential(nn.Embedding(num_embeddings=len(vocab), embedding_dim=embed_size),
                         nn.Embedding(num_embeddings=len(vocab), embedding_dim=embed_size))  # fmt: skip


def train_bert(net, steps, record):
    train_iter, vocab = load_data_wiki(8, 24)
    vocab_size = len(vocab)
    loss = nn.CrossEntropyLoss()
    trainer = torch.optim.Adam(net.parameters(), lr=0.01)
    record["losses"], record["mlm"], record["nsp"] = [], [], []
    first = next(iter(train_iter))
    record["first_batch"] = [
        first[0][:2].tolist(),
        first[2][:4].tolist(),
        first[3][:2].tolist(),
        str(first[2].dtype).split(".")[-1],
    ]
    for _ in range(steps):
        total_mlm, total_nsp = 0.0, 0.0
        for tokens_X, segments_X, valid_lens_x, pred_positions_X, mlm_weights_X, mlm_Y, nsp_y in train_iter:
            trainer.zero_grad()
            mlm_l, nsp_l, l = _get_batch_loss_bert(net, loss, vocab_size, tokens_X, segments_X, valid_lens_x,
                                                   pred_positions_X, mlm_weights_X, mlm_Y, nsp_y)  # fmt: skip
            l.backward()
            trainer.step()
            total_mlm += mlm_l.item()
            total_nsp += nsp_l.item()
        record["losses"].append(total_mlm + total_nsp)
        record["mlm"].append(total_mlm)
        record["nsp"].append(total_nsp)
    net.eval()
    tokens_a, tokens_b = ["a", "cat", "eats", "rice"], ["the", "dog", "runs"]
    encoded = get_bert_encoding(net, tokens_a, tokens_b, vocab)
    record["encoding"] = [list(encoded.shape), encoded[:, 0, :4].tolist(), encoded[:, 2, :4].tolist()]
    return record


def train(net, steps=3):
    torch.manual_seed(1)
    record = {}
    if MODEL == "bert":
        return train_bert(net, steps, record)
    random.seed(2)
    data_iter, vocab = load_data_ptb(16, 2, 3)
    names = ["centers", "contexts_negatives", "masks", "labels"]
    record["batch"] = [
        [name, batch.shape[0], batch[:2].tolist()] for name, batch in zip(names, next(iter(data_iter)), strict=False)
    ]
    embed = nn.Embedding(num_embeddings=20, embedding_dim=4)
    record["embed"] = [list(embed.weight.shape), list(embed(torch.tensor([[1, 2, 3], [4, 5, 6]])).shape)]
    loss = SigmoidBCELoss()
    pred = torch.tensor([[1.1, -2.2, 3.3, -4.4]] * 2)
    label = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    record["sigmoid_bce"] = (loss(pred, label, mask) * mask.shape[1] / mask.sum(axis=1)).tolist()

    def init_weights(module):
        if type(module) == nn.Embedding:  # noqa: E721  (the book's test)
            nn.init.xavier_uniform_(module.weight)

    net.apply(init_weights)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    record["losses"] = []
    for _ in range(steps):
        total, count = 0.0, 0
        for batch in data_iter:
            optimizer.zero_grad()
            center, context_negative, mask, label = [d for d in batch]
            pred = skip_gram(center, context_negative, net[0], net[1])
            l = loss(pred.reshape(label.shape).float(), label.float(), mask) / mask.sum(axis=1) * mask.shape[1]  # noqa: E741
            l.sum().backward()
            optimizer.step()
            total += l.sum()
            count += l.numel()
        record["losses"].append(float(total / count))
    record["similar"] = get_similar_tokens("cat", 3, net[0], vocab)
    corpus_ids = [vocab[line] for line in read_corpus()]
    glove(vocab, corpus_ids, steps, record)
    bpe(record)
    return record


if __name__ == "__main__":
    print(train(build()))
