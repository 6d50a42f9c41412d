"""A GPT-2 language model fine-tuned and sampled from, written the way Hugging Face transformers'
``modeling_gpt2.py`` and ``generation/utils.py`` write it.

Idioms: ``Conv1D`` (a transposed Linear by ``torch.addmm`` over ``x.view(-1, x.size(-1))`` and
``x.size()[:-1] + (nf,)``); a boolean causal ``bias`` buffer and a ``masked_bias`` buffer registered
with ``persistent=False`` and sliced by ``key_length - query_length``; the eager attention masking by
``torch.where(causal_mask, w, torch.full([], torch.finfo(w.dtype).min, ...))`` after dividing by a 0-d
``torch.full``; the SDPA attention (``ATTN = "sdpa"``) with a 4-d float ``attn_mask`` built from the
padding mask, ``is_causal`` when there is none; ``past_key_values`` as tuples grown by ``torch.cat``;
``(1.0 - mask) * torch.finfo(self.dtype).min`` over a ``dtype`` property read from the parameters;
``NewGELUActivation``'s tanh formula with ``torch.pow(x, 3.0)``; ``_init_weights`` by ``module.weight.data
.normal_`` and the scaled ``c_proj.weight`` re-initialised by name; tied ``lm_head`` and ``wte``;
shifted labels with -100 padding; AdamW with ``get_linear_schedule_with_warmup`` (``LambdaLR``) and
``clip_grad_norm_``; left-padded generation whose ``position_ids`` come from
``attention_mask.long().cumsum(-1) - 1`` with ``masked_fill_``, the mask grown by ``new_ones``; the
logits processors (temperature, repetition penalty by ``gather``/``scatter``, top-k by
``torch.topk(...)[0][..., -1, None]``, top-p by ``sort``, ``cumsum`` and a scattered mask) and the
sampling loop (``torch.multinomial(probs, num_samples=1).squeeze(1)``, ``unfinished_sequences``,
``next_tokens * unfinished + pad * (1 - unfinished)``) under ``torch.no_grad()``.
"""

from __future__ import annotations

import math

import numpy as np
from shim import nn, optim, torch

ATTN = "eager"  # or "sdpa": GPT2SdpaAttention
DROPOUT = 0.1
VOCAB, N_POSITIONS, N_EMBD, N_LAYER, N_HEAD = 24, 16, 16, 2, 2
BATCH, SEQ = 4, 8
PAD_TOKEN_ID = EOS_TOKEN_ID = 0


class GPT2Config:
    model_type = "gpt2"

    def __init__(self, **kwargs):
        self.vocab_size = kwargs.pop("vocab_size", VOCAB)
        self.n_positions = kwargs.pop("n_positions", N_POSITIONS)
        self.n_embd = kwargs.pop("n_embd", N_EMBD)
        self.n_layer = kwargs.pop("n_layer", N_LAYER)
        self.n_head = kwargs.pop("n_head", N_HEAD)
        self.n_inner = kwargs.pop("n_inner", None)
        self.resid_pdrop = self.embd_pdrop = self.attn_pdrop = kwargs.pop("pdrop", DROPOUT)
        self.layer_norm_epsilon = 1e-5
        self.initializer_range = 0.02
        self.scale_attn_weights = True
        self.scale_attn_by_inverse_layer_idx = kwargs.pop("scale_attn_by_inverse_layer_idx", False)
        self.use_cache = True
        self._attn_implementation = kwargs.pop("attn_implementation", ATTN)

    @property
    def hidden_size(self):
        return self.n_embd

    @property
    def max_position_embeddings(self):
        return self.n_positions


class Conv1D(nn.Module):
    """
    1D-convolutional layer as defined by Radford et al. for OpenAI GPT (and also used in GPT-2).

    Basically works like a linear layer but the weights are transposed.
    """

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        max_positions = config.max_position_embeddings
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions
            ),
            persistent=False,
        )
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)

        self.embed_dim = config.hidden_size
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = config.scale_attn_weights
        self.scale_attn_by_inverse_layer_idx = config.scale_attn_by_inverse_layer_idx
        self.layer_idx = layer_idx

        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)

        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.is_causal = True

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))

        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
            )

        # Layer-wise attention scaling
        if self.scale_attn_by_inverse_layer_idx:
            attn_weights = attn_weights / float(self.layer_idx + 1)

        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
        # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)

        if attention_mask is not None:
            # Apply the attention mask
            attn_weights = attn_weights + attention_mask

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)

        # Downcast (if necessary) back to V's dtype (if in mixed-precision) -- No-Op otherwise
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)

        # Mask heads if we want to
        if head_mask is not None:
            attn_weights = attn_weights * head_mask

        attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def _split_heads(self, tensor, num_heads, attn_head_size):
        """
        Splits hidden_size dim into attn_head_size and num_heads
        """
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        """
        Merges attn_head_size dim and num_attn_heads dim into hidden_size
        """
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)

        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)

        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)

        if use_cache is True:
            present = (key, value)
        else:
            present = None

        attn_output, attn_weights = self._attn(query, key, value, attention_mask, head_mask)

        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        return (attn_output, present)


class GPT2SdpaAttention(GPT2Attention):
    """
    GPT2 attention module using torch.nn.functional.scaled_dot_product_attention. This module inherits from
    `GPT2Attention` as the weights of the module stays untouched.
    """

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None, use_cache=False):
        bsz, q_len, _ = hidden_states.size()

        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)

        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)

        if layer_past is not None:
            past_key = layer_past[0]
            past_value = layer_past[1]
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)

        present = None
        if use_cache is True:
            present = (key, value)

        # We dispatch to SDPA's Flash Attention or Efficient kernels via this `is_causal` if statement
        # instead of an inline conditional assignment in SDPA to support both torch.compile's dynamic
        # shapes and full graph options.
        is_causal = True if attention_mask is None and q_len > 1 else False

        attn_output = torch.nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=self.attn_dropout.p if self.training else 0.0,
            is_causal=is_causal,
        )

        # Reshape outputs
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(bsz, q_len, self.embed_dim)

        # Final projection
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        return (attn_output, present)


GPT2_ATTENTION_CLASSES = {"eager": GPT2Attention, "sdpa": GPT2SdpaAttention}


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        hidden_size = config.hidden_size
        inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
        attention_class = GPT2_ATTENTION_CLASSES[config._attn_implementation]

        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = attention_class(config=config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None, use_cache=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(
            hidden_states,
            layer_past=layer_past,
            attention_mask=attention_mask,
            head_mask=head_mask,
            use_cache=use_cache,
        )
        attn_output = attn_outputs[0]  # output_attn: a, present, (attentions)
        outputs = attn_outputs[1:]
        # residual connection
        hidden_states = attn_output + residual

        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        # residual connection
        hidden_states = residual + feed_forward_hidden_states

        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]

        return outputs  # hidden_states, present


class GPT2PreTrainedModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    @property
    def device(self):
        return next(self.parameters()).device

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        pass

    def _init_weights(self, module):
        """Initialize the weights."""
        if isinstance(module, (nn.Linear, Conv1D)):
            # Slightly different from the TF version which uses truncated_normal for initialization
            # cf https://github.com/pytorch/pytorch/pull/5617
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

        # Reinitialize selected weights subject to the OpenAI GPT-2 Paper Scheme:
        #   > A modified initialization which accounts for the accumulation on the residual path with model depth. Scale
        #   > the weights of residual layers at initialization by a factor of 1/√N where N is the # of residual layers.
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                # Special Scaled Initialization --> There are 2 Layer Norms per Transformer Block
                p.data.normal_(mean=0.0, std=(self.config.initializer_range / math.sqrt(2 * self.config.n_layer)))


class GPT2Model(GPT2PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)

        self.embed_dim = config.hidden_size

        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.max_position_embeddings, self.embed_dim)

        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self._attn_implementation = config._attn_implementation

        # Initialize weights and apply final processing
        self.post_init()

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, use_cache=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device

        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0)

        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds

        # Attention mask.
        if attention_mask is not None:
            attention_mask = attention_mask.view(batch_size, -1)
            if self._attn_implementation == "sdpa":
                # SDPA takes the causal part too once a mask is given: the 4d mask is the padding
                # mask and the causal mask together, in the model's dtype
                query_length, key_length = input_shape[-1], attention_mask.shape[-1]
                causal = torch.tril(
                    torch.ones((query_length, key_length), dtype=torch.bool, device=device), diagonal=past_length
                )
                expanded = attention_mask[:, None, None, :].bool() & causal[None, None, :, :]
                attention_mask = torch.zeros(expanded.shape, dtype=self.dtype, device=device).masked_fill(
                    ~expanded, torch.finfo(self.dtype).min
                )
            else:
                # We create a 3D attention mask from a 2D tensor mask.
                # Sizes are [batch_size, 1, 1, to_seq_length]
                # So we can broadcast to [batch_size, num_heads, from_seq_length, to_seq_length]
                attention_mask = attention_mask[:, None, None, :]

                # Since attention_mask is 1.0 for positions we want to attend and 0.0 for
                # masked positions, this operation will create a tensor which is 0.0 for
                # positions we want to attend and the dtype's smallest value for masked positions.
                attention_mask = attention_mask.to(dtype=self.dtype)  # fp16 compatibility
                attention_mask = (1.0 - attention_mask) * torch.finfo(self.dtype).min

        hidden_states = self.drop(hidden_states)

        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)

        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask, use_cache=use_cache)
            hidden_states = outputs[0]
            if use_cache is True:
                presents = presents + (outputs[1],)

        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        return hidden_states, presents


class GPT2LMHeadModel(GPT2PreTrainedModel):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def tie_weights(self):
        if hasattr(self, "lm_head"):
            self.lm_head.weight = self.transformer.wte.weight

    def forward(
        self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, labels=None, use_cache=None
    ):
        hidden_states, presents = self.transformer(
            input_ids,
            past_key_values=past_key_values,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
        )
        lm_logits = self.lm_head(hidden_states)

        loss = None
        if labels is not None:
            # move labels to correct device to enable model parallelism
            labels = labels.to(lm_logits.device)
            # Shift so that tokens < n predict n
            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            # Flatten the tokens
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, lm_logits, presents

    # --- generation/utils.py's sampling loop, cut down to the decoder-only case ---

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        position_ids = None
        if attention_mask is not None:
            # create position_ids on the fly for batch generation
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        return {
            "input_ids": input_ids,
            "past_key_values": past_key_values,
            "attention_mask": attention_mask,
            "position_ids": position_ids,
            "use_cache": True,
        }

    @torch.no_grad()
    def generate(self, input_ids, attention_mask, max_new_tokens, do_sample=False, logits_processor=()):
        batch_size = input_ids.shape[0]
        unfinished_sequences = torch.ones(batch_size, dtype=torch.long, device=input_ids.device)
        past_key_values = None
        for _ in range(max_new_tokens):
            model_inputs = self.prepare_inputs_for_generation(input_ids, past_key_values, attention_mask)
            _, logits, past_key_values = self(**model_inputs)
            next_token_logits = logits[:, -1, :].clone().float()
            next_token_scores = next_token_logits
            for processor in logits_processor:
                next_token_scores = processor(input_ids, next_token_scores)
            if do_sample:
                probs = nn.functional.softmax(next_token_scores, dim=-1)
                next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            else:
                next_tokens = torch.argmax(next_token_scores, dim=-1)
            # finished sentences should have their next token be a padding token
            next_tokens = next_tokens * unfinished_sequences + PAD_TOKEN_ID * (1 - unfinished_sequences)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
            unfinished_sequences = unfinished_sequences & ~(next_tokens == EOS_TOKEN_ID)
            if unfinished_sequences.max() == 0:
                break
        return input_ids


class TemperatureLogitsWarper:
    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        scores_processed = scores / self.temperature
        return scores_processed


class RepetitionPenaltyLogitsProcessor:
    def __init__(self, penalty: float):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        # if score < 0 then repetition penalty has to be multiplied to reduce the token probabilities
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        scores_processed = scores.scatter(1, input_ids, score)
        return scores_processed


class TopKLogitsWarper:
    def __init__(self, top_k: int, filter_value: float = -float("Inf"), min_tokens_to_keep: int = 1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


class TopPLogitsWarper:
    def __init__(self, top_p: float, filter_value: float = -float("Inf"), min_tokens_to_keep: int = 1):
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        # Keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def build():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config())


def make_batch(seed=0):
    """Right-padded sequences of a counting language (each token is the previous plus a stride)
    with their attention mask and -100 labels on the padding."""
    rng = np.random.default_rng(seed)
    ids = np.full((BATCH, SEQ), PAD_TOKEN_ID, dtype=np.int64)
    mask = np.zeros((BATCH, SEQ), dtype=np.int64)
    for row in range(BATCH):
        length = int(rng.integers(SEQ // 2, SEQ + 1))
        start, stride = int(rng.integers(1, VOCAB)), int(rng.integers(1, 3))
        ids[row, :length] = 1 + (start + stride * np.arange(length)) % (VOCAB - 1)
        mask[row, :length] = 1
    labels = np.where(mask == 1, ids, -100)
    return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(labels)


def train(model, steps=3):
    input_ids, attention_mask, labels = make_batch()
    no_decay = ["bias", "LayerNorm.weight", "ln_1.weight", "ln_2.weight", "ln_f.weight"]
    optimizer_grouped_parameters = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": 0.01,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = optim.AdamW(optimizer_grouped_parameters, lr=5e-3, eps=1e-8)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps + 1)
    losses, grad_norms = [], []
    model.train()
    for _ in range(steps):
        loss, _, _ = model(input_ids, attention_mask=attention_mask, labels=labels)
        loss.backward()
        grad_norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())

    model.eval()
    buffers = sorted(name for name, _ in model.named_buffers())
    with torch.no_grad():
        # the cache: one pass over the prompt then a token at a time gives the full pass's logits
        _, full_logits, _ = model(input_ids[:, :6], use_cache=False)
        _, first, past = model(input_ids[:, :5], use_cache=True)
        _, last, _ = model(input_ids[:, 5:6], past_key_values=past, use_cache=True)
        cache_error = (torch.cat([first, last], dim=1) - full_logits).abs().max().item()

    # left-padded prompts, as generation pads them
    prompt = torch.tensor([[PAD_TOKEN_ID, PAD_TOKEN_ID, 3, 4], [5, 7, 9, 11]])
    prompt_mask = (prompt != PAD_TOKEN_ID).long()
    greedy = model.generate(prompt, prompt_mask, max_new_tokens=4)
    torch.manual_seed(1234)
    processors = [
        RepetitionPenaltyLogitsProcessor(1.3),
        TemperatureLogitsWarper(0.8),
        TopKLogitsWarper(top_k=6),
        TopPLogitsWarper(top_p=0.9),
    ]
    sampled = model.generate(prompt, prompt_mask, max_new_tokens=4, do_sample=True, logits_processor=processors)
    return {
        "losses": losses,
        "grad_norms": grad_norms,
        "lr": scheduler.get_last_lr()[0],
        "cache_ok": cache_error < 1e-4,
        "greedy": greedy.tolist(),
        "sampled": sampled.tolist(),
        "tied": model.lm_head.weight is model.transformer.wte.weight,
        "state_keys": len(model.state_dict()),
        "buffers": len(buffers),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
