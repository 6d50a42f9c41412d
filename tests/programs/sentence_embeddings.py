"""Sentence embeddings trained with contrastive losses, written the way sentence-transformers
(``models/Transformer.py``, ``models/Pooling.py``, ``models/Normalize.py``, ``SentenceTransformer.encode``,
``losses/*``, ``util.py``) writes it over a DistilBERT-style encoder as Hugging Face's
``modeling_distilbert.py`` writes that.

Idioms: DistilBERT's ``create_sinusoidal_embeddings`` (``out.requires_grad = False``, ``out[:, 0::2] =
torch.FloatTensor(np.sin(position_enc[:, 0::2]))``, ``out.detach_()``), positions by ``arange(...)
.unsqueeze(0).expand_as(input_ids)``, its attention mask ``(mask == 0).view(mask_reshp).expand_as(scores)``
into ``scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))``, ``q / math.sqrt(dim)``,
``shape``/``unshape`` closures; modules passing a ``features`` dict through an ``nn.Sequential``
subclass; ``Pooling`` by mean (``attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()``,
``torch.clamp(sum_mask, min=1e-9)``), CLS, max (``token_embeddings[input_mask_expanded == 0] = -1e9``,
``torch.max(token_embeddings, 1)[0]``) or mean-sqrt-len; ``F.normalize(p=2, dim=1)``; ``util.cos_sim`` by
``torch.mm(a_norm, b_norm.transpose(0, 1))``; MultipleNegativesRankingLoss with hard negatives
(``torch.cat(reps[1:])``, ``cross_entropy(scores, torch.arange(len(scores)))``), CoSENTLoss (``scores[:, None]
- scores[None, :]``, ``scores - (1 - labels) * 1e12``, ``torch.cat((torch.zeros(1).to(scores.device),
scores.view(-1)))``, ``logsumexp``), CosineSimilarityLoss (``torch.cosine_similarity`` + ``MSELoss`` on
``labels.view(-1)``) and MatryoshkaLoss (the loss over truncated, re-normalised prefixes of the embedding,
weighted); ``encode`` sorting sentences by ``np.argsort([-len(s) for s in sentences])``, batching under
``torch.no_grad()``, ``embeddings.detach()``, restoring the order and ``torch.stack``; ``semantic_search`` by
``torch.topk(cos_scores, k, dim=1, largest=True, sorted=False)`` and ``.cpu().tolist()`` into ``heapq``;
a Spearman correlation of cosine scores for evaluation.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from shim import F, nn, optim, torch

LOSS = "mnrl"  # or "cosent", "cosine", "matryoshka"
POOLING = "mean"  # or "cls", "max", "mean_sqrt_len_tokens"
DROPOUT = 0.1
VOCAB, DIM, HEADS, LAYERS, HIDDEN, MAX_POSITIONS = 40, 16, 2, 2, 32, 24
PAD, CLS, SEP = 0, 1, 2


def create_sinusoidal_embeddings(n_pos: int, dim: int, out):
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out.requires_grad = False
    out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    out.detach_()


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, DIM)
        create_sinusoidal_embeddings(n_pos=MAX_POSITIONS, dim=DIM, out=self.position_embeddings.weight)
        self.LayerNorm = nn.LayerNorm(DIM, eps=1e-12)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)  # (max_seq_length)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)  # (bs, max_seq_length)
        word_embeddings = self.word_embeddings(input_ids)  # (bs, max_seq_length, dim)
        position_embeddings = self.position_embeddings(position_ids)  # (bs, max_seq_length, dim)
        embeddings = word_embeddings + position_embeddings  # (bs, max_seq_length, dim)
        embeddings = self.LayerNorm(embeddings)  # (bs, max_seq_length, dim)
        embeddings = self.dropout(embeddings)  # (bs, max_seq_length, dim)
        return embeddings


class MultiHeadSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_heads = HEADS
        self.dim = DIM
        self.dropout = nn.Dropout(p=DROPOUT)
        self.q_lin = nn.Linear(in_features=DIM, out_features=DIM)
        self.k_lin = nn.Linear(in_features=DIM, out_features=DIM)
        self.v_lin = nn.Linear(in_features=DIM, out_features=DIM)
        self.out_lin = nn.Linear(in_features=DIM, out_features=DIM)

    def forward(self, query, key, value, mask):
        bs, q_length, dim = query.size()
        k_length = key.size(1)
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, k_length)

        def shape(x):
            """separate heads"""
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(x):
            """group heads"""
            return x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q = shape(self.q_lin(query))  # (bs, n_heads, q_length, dim_per_head)
        k = shape(self.k_lin(key))  # (bs, n_heads, k_length, dim_per_head)
        v = shape(self.v_lin(value))  # (bs, n_heads, k_length, dim_per_head)

        q = q / math.sqrt(dim_per_head)  # (bs, n_heads, q_length, dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))  # (bs, n_heads, q_length, k_length)
        mask = (mask == 0).view(mask_reshp).expand_as(scores)  # (bs, n_heads, q_length, k_length)
        scores = scores.masked_fill(
            mask, torch.tensor(torch.finfo(scores.dtype).min)
        )  # (bs, n_heads, q_length, k_length)

        weights = nn.functional.softmax(scores, dim=-1)  # (bs, n_heads, q_length, k_length)
        weights = self.dropout(weights)  # (bs, n_heads, q_length, k_length)

        context = torch.matmul(weights, v)  # (bs, n_heads, q_length, dim_per_head)
        context = unshape(context)  # (bs, q_length, dim)
        context = self.out_lin(context)  # (bs, q_length, dim)
        return (context,)


class FFN(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(p=DROPOUT)
        self.lin1 = nn.Linear(in_features=DIM, out_features=HIDDEN)
        self.lin2 = nn.Linear(in_features=HIDDEN, out_features=DIM)
        self.activation = nn.GELU()

    def forward(self, input):
        x = self.lin1(input)
        x = self.activation(x)
        x = self.lin2(x)
        x = self.dropout(x)
        return x


class TransformerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = MultiHeadSelfAttention()
        self.sa_layer_norm = nn.LayerNorm(normalized_shape=DIM, eps=1e-12)
        self.ffn = FFN()
        self.output_layer_norm = nn.LayerNorm(normalized_shape=DIM, eps=1e-12)

    def forward(self, x, attn_mask=None):
        sa_output = self.attention(query=x, key=x, value=x, mask=attn_mask)[0]
        sa_output = self.sa_layer_norm(sa_output + x)  # (bs, seq_length, dim)
        ffn_output = self.ffn(sa_output)  # (bs, seq_length, dim)
        ffn_output = self.output_layer_norm(ffn_output + sa_output)  # (bs, seq_length, dim)
        return (ffn_output,)


class DistilBertModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layer = nn.ModuleList([TransformerBlock() for _ in range(LAYERS)])

    def forward(self, input_ids, attention_mask):
        hidden_state = self.embeddings(input_ids)
        for layer_module in self.layer:
            hidden_state = layer_module(x=hidden_state, attn_mask=attention_mask)[-1]
        return (hidden_state,)


class ToyTokenizer:
    def __call__(self, texts, padding=True, truncation="longest_first", return_tensors="pt", max_length=12):
        ids = [
            [CLS] + [3 + (ord(c) - 97) % (VOCAB - 3) for c in text.replace(" ", "")][: max_length - 2] + [SEP]
            for text in texts
        ]
        longest = max(len(i) for i in ids)
        return {
            "input_ids": torch.tensor([i + [PAD] * (longest - len(i)) for i in ids]),
            "attention_mask": torch.tensor([[1] * len(i) + [0] * (longest - len(i)) for i in ids]),
        }


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.auto_model = DistilBertModel()
        self.tokenizer = ToyTokenizer()

    def forward(self, features):
        trans_features = {"input_ids": features["input_ids"], "attention_mask": features["attention_mask"]}
        output_states = self.auto_model(**trans_features)
        output_tokens = output_states[0]
        features.update({"token_embeddings": output_tokens, "attention_mask": features["attention_mask"]})
        return features

    def tokenize(self, texts):
        return self.tokenizer(texts)

    def get_word_embedding_dimension(self):
        return DIM


class Pooling(nn.Module):
    def __init__(self, word_embedding_dimension, pooling_mode="mean"):
        super().__init__()
        self.word_embedding_dimension = word_embedding_dimension
        self.pooling_mode_cls_token = pooling_mode == "cls"
        self.pooling_mode_max_tokens = pooling_mode == "max"
        self.pooling_mode_mean_tokens = pooling_mode == "mean"
        self.pooling_mode_mean_sqrt_len_tokens = pooling_mode == "mean_sqrt_len_tokens"

    def forward(self, features):
        token_embeddings = features["token_embeddings"]
        attention_mask = features["attention_mask"]
        ## Pooling strategy
        output_vectors = []
        if self.pooling_mode_cls_token:
            cls_token = features.get("cls_token_embeddings", token_embeddings[:, 0])  # Take first token by default
            output_vectors.append(cls_token)
        if self.pooling_mode_max_tokens:
            input_mask_expanded = (
                attention_mask.unsqueeze(-1).expand(token_embeddings.size()).to(token_embeddings.dtype)
            )
            token_embeddings = token_embeddings.clone()
            token_embeddings[input_mask_expanded == 0] = -1e9  # Set padding tokens to large negative value
            max_over_time = torch.max(token_embeddings, 1)[0]
            output_vectors.append(max_over_time)
        if self.pooling_mode_mean_tokens or self.pooling_mode_mean_sqrt_len_tokens:
            input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
            sum_embeddings = torch.sum(token_embeddings * input_mask_expanded, 1)
            sum_mask = input_mask_expanded.sum(1)
            sum_mask = torch.clamp(sum_mask, min=1e-9)
            if self.pooling_mode_mean_tokens:
                output_vectors.append(sum_embeddings / sum_mask)
            if self.pooling_mode_mean_sqrt_len_tokens:
                output_vectors.append(sum_embeddings / torch.sqrt(sum_mask))
        output_vector = torch.cat(output_vectors, 1)
        features.update({"sentence_embedding": output_vector})
        return features


class Normalize(nn.Module):
    def forward(self, features):
        features.update({"sentence_embedding": F.normalize(features["sentence_embedding"], p=2, dim=1)})
        return features


class SentenceTransformer(nn.Sequential):
    def tokenize(self, texts):
        return self._first_module().tokenize(texts)

    def _first_module(self):
        return self._modules[next(iter(self._modules))]

    def encode(self, sentences, batch_size=4, convert_to_tensor=True, normalize_embeddings=False):
        self.eval()
        input_was_string = False
        if isinstance(sentences, str) or not hasattr(sentences, "__len__"):
            sentences = [sentences]
            input_was_string = True
        all_embeddings = []
        length_sorted_idx = np.argsort([-len(sen) for sen in sentences], kind="stable")
        sentences_sorted = [sentences[idx] for idx in length_sorted_idx]
        for start_index in range(0, len(sentences), batch_size):
            sentences_batch = sentences_sorted[start_index : start_index + batch_size]
            features = self.tokenize(sentences_batch)
            with torch.no_grad():
                out_features = self.forward(features)
                embeddings = out_features["sentence_embedding"]
                embeddings = embeddings.detach()
                if normalize_embeddings:
                    embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
            all_embeddings.extend(embeddings)
        all_embeddings = [all_embeddings[idx] for idx in np.argsort(length_sorted_idx)]
        if convert_to_tensor:
            all_embeddings = torch.stack(all_embeddings)
        if input_was_string:
            all_embeddings = all_embeddings[0]
        return all_embeddings


def cos_sim(a, b):
    if not isinstance(a, torch.Tensor):
        a = torch.tensor(a)
    if not isinstance(b, torch.Tensor):
        b = torch.tensor(b)
    if len(a.shape) == 1:
        a = a.unsqueeze(0)
    if len(b.shape) == 1:
        b = b.unsqueeze(0)
    a_norm = torch.nn.functional.normalize(a, p=2, dim=1)
    b_norm = torch.nn.functional.normalize(b, p=2, dim=1)
    return torch.mm(a_norm, b_norm.transpose(0, 1))


def semantic_search(query_embeddings, corpus_embeddings, top_k=2):
    cos_scores = cos_sim(query_embeddings, corpus_embeddings)
    cos_scores_top_k_values, cos_scores_top_k_idx = torch.topk(
        cos_scores, min(top_k, len(cos_scores[0])), dim=1, largest=True, sorted=False
    )
    cos_scores_top_k_values = cos_scores_top_k_values.cpu().tolist()
    cos_scores_top_k_idx = cos_scores_top_k_idx.cpu().tolist()
    queries_result_list = []
    for query_itr in range(len(cos_scores)):
        heap = []
        for sub_corpus_id, score in zip(cos_scores_top_k_idx[query_itr], cos_scores_top_k_values[query_itr]):
            heapq.heappush(heap, (score, sub_corpus_id))
        hits = [{"corpus_id": corpus_id, "score": score} for score, corpus_id in heap]
        queries_result_list.append(sorted(hits, key=lambda x: x["score"], reverse=True))
    return queries_result_list


class MultipleNegativesRankingLoss(nn.Module):
    def __init__(self, model, scale: float = 20.0, similarity_fct=cos_sim):
        super().__init__()
        self.model = model
        self.scale = scale
        self.similarity_fct = similarity_fct
        self.cross_entropy_loss = nn.CrossEntropyLoss()

    def forward(self, sentence_features, labels):
        reps = [self.model(sentence_feature)["sentence_embedding"] for sentence_feature in sentence_features]
        return self.compute_loss_from_embeddings(reps, labels)

    def compute_loss_from_embeddings(self, reps, labels):
        embeddings_a = reps[0]
        embeddings_b = torch.cat(reps[1:])
        scores = self.similarity_fct(embeddings_a, embeddings_b) * self.scale
        # Example a[i] should match with b[i]
        range_labels = torch.arange(0, scores.size(0), device=scores.device)
        return self.cross_entropy_loss(scores, range_labels)


class CoSENTLoss(nn.Module):
    def __init__(self, model, scale: float = 20.0):
        super().__init__()
        self.model = model
        self.scale = scale

    def forward(self, sentence_features, labels):
        embeddings = [self.model(sentence_feature)["sentence_embedding"] for sentence_feature in sentence_features]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings, labels):
        scores = torch.cosine_similarity(embeddings[0], embeddings[1])
        scores = scores * self.scale
        scores = scores[:, None] - scores[None, :]

        # label matrix indicating which pairs are relevant
        labels = labels[:, None] < labels[None, :]
        labels = labels.float()

        # mask out irrelevant pairs so they are negligible after exp()
        scores = scores - (1 - labels) * 1e12

        # append a zero as e^0 = 1
        scores = torch.cat((torch.zeros(1).to(scores.device), scores.view(-1)), dim=0)
        loss = torch.logsumexp(scores, dim=0)
        return loss


class CosineSimilarityLoss(nn.Module):
    # modules as default arguments, built once at import, as sentence-transformers writes them
    def __init__(self, model, loss_fct=nn.MSELoss(), cos_score_transformation=nn.Identity()):  # noqa: B008
        super().__init__()
        self.model = model
        self.loss_fct = loss_fct
        self.cos_score_transformation = cos_score_transformation

    def forward(self, sentence_features, labels):
        embeddings = [self.model(sentence_feature)["sentence_embedding"] for sentence_feature in sentence_features]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings, labels):
        output = self.cos_score_transformation(torch.cosine_similarity(embeddings[0], embeddings[1]))
        return self.loss_fct(output, labels.float().view(-1))


class MatryoshkaLoss(nn.Module):
    def __init__(self, model, loss, matryoshka_dims, matryoshka_weights=None):
        super().__init__()
        self.model = model
        self.loss = loss
        if matryoshka_weights is None:
            matryoshka_weights = [1] * len(matryoshka_dims)
        # Sort the dimensions and weights in descending order
        dims_weights = zip(matryoshka_dims, matryoshka_weights)
        self.matryoshka_dims, self.matryoshka_weights = zip(*sorted(dims_weights, key=lambda x: x[0], reverse=True))

    def forward(self, sentence_features, labels):
        reps = [self.model(sentence_feature)["sentence_embedding"] for sentence_feature in sentence_features]
        loss = 0.0
        for dim, weight in zip(self.matryoshka_dims, self.matryoshka_weights):
            truncated = [F.normalize(rep[..., :dim], p=2, dim=-1) for rep in reps]
            loss += weight * self.loss.compute_loss_from_embeddings(truncated, labels)
        return loss


WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango", "peach", "plum", "kiwi", "melon", "olive", "fig"]


def pairs(step):
    """(anchor, positive, hard negative, similarity): a positive shares its anchor's first word."""
    rows = []
    for i in range(4):
        a, b, c = WORDS[(step + i) % 12], WORDS[(step + 3 * i + 1) % 12], WORDS[(2 * step + i + 5) % 12]
        rows.append((f"{a} {b}", f"{a} {c}"[: 6 + i], f"{c} {b}", 1.0 - 0.2 * i))
    return rows


def build():
    torch.manual_seed(0)
    word_embedding_model = Transformer()
    pooling_model = Pooling(word_embedding_model.get_word_embedding_dimension(), pooling_mode=POOLING)
    return SentenceTransformer(word_embedding_model, pooling_model, Normalize())


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def spearman(x, y):
    rank_x = np.argsort(np.argsort(x))
    rank_y = np.argsort(np.argsort(y))
    return float(np.corrcoef(rank_x, rank_y)[0, 1])


def train(model, steps=4):
    if LOSS == "mnrl":
        train_loss = MultipleNegativesRankingLoss(model)
    elif LOSS == "cosent":
        train_loss = CoSENTLoss(model)
    elif LOSS == "cosine":
        train_loss = CosineSimilarityLoss(model)
    else:
        train_loss = MatryoshkaLoss(model, MultipleNegativesRankingLoss(model), [16, 8, 4], [1.0, 0.5, 0.25])
    param_optimizer = list(train_loss.named_parameters())
    no_decay = ["bias", "LayerNorm.bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in param_optimizer if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in param_optimizer if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = optim.AdamW(optimizer_grouped_parameters, lr=5e-3)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps)
    losses = []
    model.train()
    for step in range(steps):
        batch = pairs(step)
        columns = [[row[0] for row in batch], [row[1] for row in batch]]
        if LOSS in ("mnrl", "matryoshka"):
            columns.append([row[2] for row in batch])
        labels = torch.tensor([row[3] for row in batch])
        features = [model.tokenize(texts) for texts in columns]
        loss_value = train_loss(features, labels)
        loss_value.backward()
        torch.nn.utils.clip_grad_norm_(train_loss.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
        losses.append(loss_value.item())

    sentences = [row[0] for row in pairs(steps)] + [row[1] for row in pairs(steps)]
    embeddings = model.encode(sentences, batch_size=3, convert_to_tensor=True)
    single = model.encode(sentences[0])
    hits = semantic_search(embeddings[:4], embeddings[4:], top_k=2)
    scores = torch.cosine_similarity(embeddings[:4], embeddings[4:]).tolist()
    gold = [row[3] for row in pairs(steps)]
    return {
        "losses": losses,
        "embeddings": embeddings.numpy().ravel().tolist(),
        "single": single.tolist(),
        "hits": [[(hit["corpus_id"], hit["score"]) for hit in query] for query in hits],
        "spearman": spearman(np.array(scores), np.array(gold)),
        "frozen_positions": model[0].auto_model.embeddings.position_embeddings.weight.requires_grad,
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
