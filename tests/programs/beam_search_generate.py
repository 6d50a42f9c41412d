"""A small decoder-only language model trained, then decoded by beam search and by top-k/top-p sampling,
written the way Hugging Face transformers' ``generation/beam_search.py`` (``BeamSearchScorer``,
``BeamHypotheses``) and ``_beam_search``, and its 2019 ``examples/run_generation.py``, write it.

Idioms: ``input_ids.repeat_interleave(num_beams, dim=0)`` (``_expand_inputs_for_generation``); beam scores
``torch.zeros((batch_size, num_beams))`` with ``beam_scores[:, 1:] = -1e9`` and ``.view((batch_size *
num_beams,))``; ``F.log_softmax`` scores plus ``beam_scores[:, None].expand_as(...)``, ``.view(batch_size,
num_beams * vocab_size)``, ``torch.topk(..., 2 * num_beams, dim=1, largest=True, sorted=True)``,
``torch.div(next_tokens, vocab_size, rounding_mode="floor")`` and ``% vocab_size``; the scorer's Python
loop over ``zip`` of tensor rows (``next_token.item() in eos_token_id``, a 0-d ``next_index`` indexing
``input_ids``, tensor elements assigned into ``next_beam_*`` buffers, ``self._done`` as a bool tensor);
``BeamHypotheses.add`` with the length penalty ``sum_logprobs / (hyp.shape[-1] ** length_penalty)`` and
``is_done``; the cache reordered by ``past_state.index_select(0, beam_idx)`` and ``input_ids[beam_idx, :]``;
``finalize`` with ``input_ids.new(n)`` buffers, ``decoded[i, : sent_lengths[i]] = hypo`` sliced by a 0-d
tensor, ``fill_``; the key/value cache grown by ``torch.cat`` with SDPA ``is_causal`` only for the prompt;
run_generation's ``top_k_top_p_filtering`` on 1-d logits (``logits < torch.topk(logits, top_k)[0][..., -1,
None]``, ``sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()``,
``logits[sorted_indices[sorted_indices_to_remove]] = filter_value``) and ``torch.multinomial(...,
generator=torch.Generator().manual_seed(seed))``, all under ``@torch.no_grad()``.
"""

from __future__ import annotations

from collections import UserDict

from shim import F, nn, optim, torch

DROPOUT = 0.1
LENGTH_PENALTY = 1.0
EARLY_STOPPING = False
NUM_BEAMS = 3
VOCAB, HIDDEN, HEADS, LAYERS, MAX_LEN = 20, 16, 2, 2, 16
PAD, BOS, EOS = 0, 1, 2


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_heads = HEADS
        self.head_dim = HIDDEN // HEADS
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.dropout = DROPOUT

    def forward(self, x, layer_past=None):
        bsz, q_len, _ = x.size()
        q, k, v = self.qkv(x).split(HIDDEN, dim=2)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        if layer_past is not None:
            k = torch.cat((layer_past[0], k), dim=-2)
            v = torch.cat((layer_past[1], v), dim=-2)
        present = (k, v)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=layer_past is None and q_len > 1
        )
        y = y.transpose(1, 2).reshape(bsz, q_len, HIDDEN)
        return self.out(y), present


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x, layer_past=None):
        attn_output, present = self.attn(self.ln_1(x), layer_past)
        x = x + attn_output
        x = x + self.mlp(self.ln_2(x))
        return x, present


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(MAX_LEN, HIDDEN)
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids, past_key_values=None):
        past_length = 0 if past_key_values is None else past_key_values[0][0].size(-2)
        if past_key_values is None:
            past_key_values = tuple([None] * len(self.h))
        position_ids = torch.arange(past_length, past_length + input_ids.shape[-1], device=input_ids.device)
        hidden = self.wte(input_ids) + self.wpe(position_ids).unsqueeze(0)
        presents = ()
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, layer_past)
            presents = presents + (present,)
        return self.lm_head(self.ln_f(hidden)), presents

    @staticmethod
    def _reorder_cache(past_key_values, beam_idx):
        return tuple(
            tuple(past_state.index_select(0, beam_idx.to(past_state.device)) for past_state in layer_past)
            for layer_past in past_key_values
        )


class BeamHypotheses:
    def __init__(self, num_beams: int, length_penalty: float, early_stopping: bool, max_length=None):
        self.length_penalty = length_penalty
        self.early_stopping = early_stopping
        self.max_length = max_length
        self.num_beams = num_beams
        self.beams = []
        self.worst_score = 1e9

    def __len__(self):
        return len(self.beams)

    def add(self, hyp, sum_logprobs: float):
        score = sum_logprobs / (hyp.shape[-1] ** self.length_penalty)
        if len(self) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp))
            if len(self) > self.num_beams:
                sorted_next_scores = sorted([(s, idx) for idx, (s, _) in enumerate(self.beams)])
                del self.beams[sorted_next_scores[0][1]]
                self.worst_score = sorted_next_scores[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs: float, cur_len: int) -> bool:
        if len(self) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        highest_attainable_score = best_sum_logprobs / cur_len**self.length_penalty
        return self.worst_score >= highest_attainable_score


class BeamSearchScorer:
    def __init__(self, batch_size, num_beams, device, length_penalty=1.0, do_early_stopping=False, max_length=None):
        self.num_beams = num_beams
        self.device = device
        self.length_penalty = length_penalty
        self.do_early_stopping = do_early_stopping
        self.num_beam_hyps_to_keep = 1
        self.group_size = num_beams
        self._beam_hyps = [
            BeamHypotheses(num_beams, length_penalty, do_early_stopping, max_length) for _ in range(batch_size)
        ]
        self._done = torch.tensor([False for _ in range(batch_size)], dtype=torch.bool, device=self.device)

    @property
    def is_done(self) -> bool:
        return self._done.all()

    def process(self, input_ids, next_scores, next_tokens, next_indices, pad_token_id=None, eos_token_id=None):
        cur_len = input_ids.shape[-1] + 1
        batch_size = len(self._beam_hyps)
        if isinstance(eos_token_id, int):
            eos_token_id = [eos_token_id]
        device = input_ids.device
        next_beam_scores = torch.zeros((batch_size, self.group_size), dtype=next_scores.dtype, device=device)
        next_beam_tokens = torch.zeros((batch_size, self.group_size), dtype=next_tokens.dtype, device=device)
        next_beam_indices = torch.zeros((batch_size, self.group_size), dtype=next_indices.dtype, device=device)

        for batch_idx, beam_hyp in enumerate(self._beam_hyps):
            if self._done[batch_idx]:
                # pad the batch
                next_beam_scores[batch_idx, :] = 0
                next_beam_tokens[batch_idx, :] = pad_token_id
                next_beam_indices[batch_idx, :] = 0
                continue

            # next tokens for this sentence
            beam_idx = 0
            for beam_token_rank, (next_token, next_score, next_index) in enumerate(
                zip(next_tokens[batch_idx], next_scores[batch_idx], next_indices[batch_idx])
            ):
                batch_beam_idx = batch_idx * self.group_size + next_index
                # add to generated hypotheses if end of sentence
                if (eos_token_id is not None) and (next_token.item() in eos_token_id):
                    # if beam_token does not belong to top num_beams tokens, it should not be added
                    is_beam_token_worse_than_top_num_beams = beam_token_rank >= self.group_size
                    if is_beam_token_worse_than_top_num_beams:
                        continue
                    beam_hyp.add(input_ids[batch_beam_idx].clone(), next_score.item())
                else:
                    # add next predicted token since it is not eos_token
                    next_beam_scores[batch_idx, beam_idx] = next_score
                    next_beam_tokens[batch_idx, beam_idx] = next_token
                    next_beam_indices[batch_idx, beam_idx] = batch_beam_idx
                    beam_idx += 1

                # once the beam for next step is full, don't add more tokens to it.
                if beam_idx == self.group_size:
                    break

            # Check if we are done so that we can save a pad step if all(done)
            self._done[batch_idx] = self._done[batch_idx] or beam_hyp.is_done(
                next_scores[batch_idx].max().item(), cur_len
            )

        return UserDict(
            {
                "next_beam_scores": next_beam_scores.view(-1),
                "next_beam_tokens": next_beam_tokens.view(-1),
                "next_beam_indices": next_beam_indices.view(-1),
            }
        )

    def finalize(self, input_ids, final_beam_scores, max_length, pad_token_id=None, eos_token_id=None):
        batch_size = len(self._beam_hyps)
        if isinstance(eos_token_id, int):
            eos_token_id = [eos_token_id]

        # finalize all open beam hypotheses and add to generated hypotheses
        for batch_idx, beam_hyp in enumerate(self._beam_hyps):
            if self._done[batch_idx]:
                continue
            # all open beam hypotheses are added to the beam hypothesis
            # beam hypothesis class automatically keeps the best beams
            for beam_id in range(self.num_beams):
                batch_beam_idx = batch_idx * self.num_beams + beam_id
                final_score = final_beam_scores[batch_beam_idx].item()
                final_tokens = input_ids[batch_beam_idx]
                beam_hyp.add(final_tokens, final_score)

        # select the best hypotheses
        sent_lengths = input_ids.new(batch_size * self.num_beam_hyps_to_keep)
        best = []
        best_scores = torch.zeros(batch_size * self.num_beam_hyps_to_keep, device=self.device, dtype=torch.float32)

        # retrieve best hypotheses
        for i, beam_hyp in enumerate(self._beam_hyps):
            sorted_hyps = sorted(beam_hyp.beams, key=lambda x: x[0])
            for j in range(self.num_beam_hyps_to_keep):
                best_hyp_tuple = sorted_hyps.pop()
                best_score = best_hyp_tuple[0]
                best_hyp = best_hyp_tuple[1]
                sent_lengths[self.num_beam_hyps_to_keep * i + j] = len(best_hyp)
                best.append(best_hyp)
                best_scores[i * self.num_beam_hyps_to_keep + j] = best_score

        # prepare for adding eos
        sent_lengths_max = sent_lengths.max().item() + 1
        sent_max_len = min(sent_lengths_max, max_length) if max_length is not None else sent_lengths_max
        decoded = input_ids.new(batch_size * self.num_beam_hyps_to_keep, sent_max_len)
        # shorter batches are padded if needed
        if sent_lengths.min().item() != sent_lengths.max().item():
            decoded.fill_(pad_token_id)

        # fill with hypotheses and eos_token_id if the latter fits in
        for i, hypo in enumerate(best):
            decoded[i, : sent_lengths[i]] = hypo
            if sent_lengths[i] < sent_max_len:
                # inserting only the first eos_token_id
                decoded[i, sent_lengths[i]] = eos_token_id[0]

        return UserDict({"sequences": decoded, "sequence_scores": best_scores})


@torch.no_grad()
def beam_search(model, input_ids, num_beams, max_length, length_penalty=1.0, early_stopping=False):
    batch_size = input_ids.shape[0]
    beam_scorer = BeamSearchScorer(
        batch_size, num_beams, input_ids.device, length_penalty, early_stopping, max_length=max_length
    )
    # _expand_inputs_for_generation
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    batch_beam_size, cur_len = input_ids.shape

    # initialise score of first beam with 0 and the rest with -1e9. This makes sure that only tokens
    # of the first beam are considered to avoid sampling the exact same tokens across all beams.
    beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float, device=input_ids.device)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view((batch_size * num_beams,))

    past_key_values = None
    while cur_len < max_length:
        model_input = input_ids if past_key_values is None else input_ids[:, -1:]
        logits, past_key_values = model(model_input, past_key_values)
        next_token_logits = logits[:, -1, :]
        next_token_scores = nn.functional.log_softmax(next_token_logits, dim=-1)  # (batch_size * num_beams, vocab_size)

        next_token_scores = next_token_scores + beam_scores[:, None].expand_as(next_token_scores)

        # reshape for beam search
        vocab_size = next_token_scores.shape[-1]
        next_token_scores = next_token_scores.view(batch_size, num_beams * vocab_size)

        # Sample 2 next tokens for each beam (so we have some spare tokens and match output of beam search)
        next_token_scores, next_tokens = torch.topk(next_token_scores, 2 * num_beams, dim=1, largest=True, sorted=True)

        next_indices = torch.div(next_tokens, vocab_size, rounding_mode="floor")
        next_tokens = next_tokens % vocab_size

        # stateless
        beam_outputs = beam_scorer.process(
            input_ids, next_token_scores, next_tokens, next_indices, pad_token_id=PAD, eos_token_id=EOS
        )

        beam_scores = beam_outputs["next_beam_scores"]
        beam_next_tokens = beam_outputs["next_beam_tokens"]
        beam_idx = beam_outputs["next_beam_indices"]

        input_ids = torch.cat([input_ids[beam_idx, :], beam_next_tokens.unsqueeze(-1)], dim=-1)
        past_key_values = model._reorder_cache(past_key_values, beam_idx)
        cur_len = cur_len + 1
        if beam_scorer.is_done:
            break

    sequence_outputs = beam_scorer.finalize(input_ids, beam_scores, max_length, pad_token_id=PAD, eos_token_id=EOS)
    return sequence_outputs["sequences"], sequence_outputs["sequence_scores"]


def top_k_top_p_filtering(logits, top_k=0, top_p=0.0, filter_value=-float("Inf")):
    """Filter a distribution of logits using top-k and/or nucleus (top-p) filtering
    Args:
        logits: logits distribution shape (vocabulary size)
        top_k >0: keep only top k tokens with highest probability (top-k filtering).
        top_p >0.0: keep the top tokens with cumulative probability >= top_p (nucleus filtering).
            Nucleus filtering is described in Holtzman et al. (http://arxiv.org/abs/1904.09751)
    """
    assert logits.dim() == 1  # batch size 1 for now - could be updated for more but the code would be less clear
    top_k = min(top_k, logits.size(-1))  # Safety check
    if top_k > 0:
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p > 0.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Remove tokens with cumulative probability above the threshold
        sorted_indices_to_remove = cumulative_probs > top_p
        # Shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        indices_to_remove = sorted_indices[sorted_indices_to_remove]
        logits[indices_to_remove] = filter_value
    return logits


@torch.no_grad()
def sample_sequence(model, length, context, temperature=1.0, top_k=0, top_p=0.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    context = torch.tensor(context, dtype=torch.long)
    context = context.unsqueeze(0).repeat(1, 1)
    generated = context
    for _ in range(length):
        logits, _ = model(generated)
        next_token_logits = logits[0, -1, :] / temperature
        filtered_logits = top_k_top_p_filtering(next_token_logits, top_k=top_k, top_p=top_p)
        next_token = torch.multinomial(F.softmax(filtered_logits, dim=-1), num_samples=1, generator=generator)
        generated = torch.cat((generated, next_token.unsqueeze(0)), dim=1)
    return generated


def corpus(step):
    """Sequences that count up from a start token and end in EOS: a pattern a few steps begin to learn."""
    rows = []
    for row in range(4):
        start = 3 + (row + 2 * step) % 9
        length = 6 + (row + step) % 4
        body = [3 + (start - 3 + i) % (VOCAB - 3) for i in range(length)]
        rows.append([BOS] + body + [EOS] + [PAD] * (10 - length))
    return torch.tensor(rows)


def build():
    torch.manual_seed(0)
    return TinyLM()


def train(model, steps=5):
    optimizer = optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    model.train()
    for step in range(steps):
        batch = corpus(step)
        logits, _ = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1), ignore_index=PAD)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    prompts = torch.tensor([[BOS, 4, 5], [BOS, 9, 10]])
    sequences, scores = beam_search(
        model, prompts, NUM_BEAMS, max_length=10, length_penalty=LENGTH_PENALTY, early_stopping=EARLY_STOPPING
    )
    sampled = sample_sequence(model, 6, [BOS, 6], temperature=0.9, top_k=8, top_p=0.9, seed=1234)
    greedy_logits, _ = model(prompts)
    return {
        "losses": losses,
        "beam_sequences": sequences.tolist(),
        "beam_scores": scores.tolist(),
        "sampled": sampled[0].tolist(),
        "greedy_next": greedy_logits[:, -1].argmax(-1).tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=40))
